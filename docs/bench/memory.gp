set terminal pngcairo size 900,520 font 'DejaVu Sans,10'
set output 'memory.png'
set title 'Server resident memory against held leases'
set logscale x 10
set grid
set key off
set xlabel 'held leases'
set ylabel 'RSS (MiB)'
plot 'memory.dat' using 1:2 with linespoints lw 2 pt 7
