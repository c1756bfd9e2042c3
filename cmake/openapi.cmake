# The OpenAPI description of the HTTP API (docs/openapi.json), compiled into fencelock_net the
# way the dashboard is (cmake/embed_files.cmake), and served at GET /v1/openapi.json. The file in
# docs/ is the one source: tests/integration/openapi_test.cpp validates real answers against it.
set(fencelock_openapi_cpp ${PROJECT_BINARY_DIR}/generated/openapi_files.cpp)

add_custom_command(
  OUTPUT ${fencelock_openapi_cpp}
  COMMAND ${CMAKE_COMMAND} -DINPUT_DIR=${PROJECT_SOURCE_DIR}/docs -DFILES=openapi.json
          -DOUTPUT=${fencelock_openapi_cpp} -DFUNCTION=openapi_files
          -P ${CMAKE_CURRENT_LIST_DIR}/embed_files.cmake
  DEPENDS ${PROJECT_SOURCE_DIR}/docs/openapi.json ${CMAKE_CURRENT_LIST_DIR}/embed_files.cmake
  COMMENT "Embedding the OpenAPI document (docs/openapi.json)"
  VERBATIM)

target_sources(fencelock_net PRIVATE ${PROJECT_SOURCE_DIR}/net/openapi.cpp
                                     ${fencelock_openapi_cpp})
# For targets in other directories that compile net/routes.cpp themselves (fuzz/).
add_custom_target(fencelock_openapi_generated DEPENDS ${fencelock_openapi_cpp})
