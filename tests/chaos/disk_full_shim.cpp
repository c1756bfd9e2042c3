// A full disk for the embedded store, without privileges: an LD_PRELOAD library for the server
// under test. While the file named by $CHAOS_DISK_FULL_FLAG exists, every write to a
// regular file (SQLite's database, WAL and journal; the server writes nothing else there) fails
// with ENOSPC, as on a full file system; writes to pipes and sockets (the log on stdout, HTTP)
// go through. The driver (chaos_driver.cpp) creates and removes the flag.
//
// Why a shim: a real full file system (a small tmpfs, filled) needs a mount, and even then SQLite
// keeps writing into WAL pages it already allocated, so most commits would still succeed; a
// file-size limit (prlimit --fsize) raises SIGXFSZ, which kills the server. The shim makes every
// commit fail the way a full disk fails the first write that needs a new block.

#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace {

// Returns whether writes to `fd` must fail now: the flag exists and fd is a regular file.
bool disk_full(int fd) {
  static const char* flag = std::getenv("CHAOS_DISK_FULL_FLAG");
  if (flag == nullptr || ::access(flag, F_OK) != 0)
    return false;
  struct stat st {};
  return ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

template <class Fn>
Fn next(const char* name) {
  return reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, name));
}

} // namespace

extern "C" {

ssize_t write(int fd, const void* buf, size_t n) {
  static auto real = next<ssize_t (*)(int, const void*, size_t)>("write");
  if (disk_full(fd)) {
    errno = ENOSPC;
    return -1;
  }
  return real(fd, buf, n);
}

ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) {
  static auto real = next<ssize_t (*)(int, const void*, size_t, off_t)>("pwrite");
  if (disk_full(fd)) {
    errno = ENOSPC;
    return -1;
  }
  return real(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void* buf, size_t n, off64_t off) {
  static auto real = next<ssize_t (*)(int, const void*, size_t, off64_t)>("pwrite64");
  if (disk_full(fd)) {
    errno = ENOSPC;
    return -1;
  }
  return real(fd, buf, n, off);
}

ssize_t writev(int fd, const struct iovec* iov, int cnt) {
  static auto real = next<ssize_t (*)(int, const struct iovec*, int)>("writev");
  if (disk_full(fd)) {
    errno = ENOSPC;
    return -1;
  }
  return real(fd, iov, cnt);
}

} // extern "C"
