# The dashboard page (net/dashboard/, docs/dashboard.md), compiled into fencelock_net: at build
# time cmake/embed_files.cmake turns each file below into a byte array, so that the binary serves
# the page with nothing installed beside it, and nothing is downloaded. List a new file here.
set(FENCELOCK_DASHBOARD_FILES
  index.html
  style.css
  favicon.svg
  app.js
  connection.js
  lock_model.js
  virtual_list.js
  lock_table.js
  event_log.js
  rate_chart.js
  format.js)

set(fencelock_dashboard_dir ${PROJECT_SOURCE_DIR}/net/dashboard)
list(TRANSFORM FENCELOCK_DASHBOARD_FILES PREPEND ${fencelock_dashboard_dir}/
     OUTPUT_VARIABLE fencelock_dashboard_inputs)
list(JOIN FENCELOCK_DASHBOARD_FILES "," fencelock_dashboard_names)
set(fencelock_dashboard_cpp ${PROJECT_BINARY_DIR}/generated/dashboard_files.cpp)

add_custom_command(
  OUTPUT ${fencelock_dashboard_cpp}
  COMMAND ${CMAKE_COMMAND} -DINPUT_DIR=${fencelock_dashboard_dir}
          -DFILES=${fencelock_dashboard_names} -DOUTPUT=${fencelock_dashboard_cpp}
          -P ${CMAKE_CURRENT_LIST_DIR}/embed_files.cmake
  DEPENDS ${fencelock_dashboard_inputs} ${CMAKE_CURRENT_LIST_DIR}/embed_files.cmake
  COMMENT "Embedding the dashboard page (net/dashboard/)"
  VERBATIM)

target_sources(fencelock_net PRIVATE ${PROJECT_SOURCE_DIR}/net/dashboard.cpp
                                     ${fencelock_dashboard_cpp})
