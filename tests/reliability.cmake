# Reliability tests (docs/reliability.md) that need more than the default test_*.c recipe.
# Included from tests/CMakeLists.txt after the test executables are defined.

# The CLI's sources again, with main renamed, so test_failalloc can drive whole commands in-process
# while each library allocation fails in turn.
if(REPROCL_BUILD_CLI AND TARGET test_failalloc)
  file(GLOB REPROCL_CLI_INPROC_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/cli/*.c)
  list(SORT REPROCL_CLI_INPROC_SOURCES)
  add_library(rcl_cli_inproc STATIC ${REPROCL_CLI_INPROC_SOURCES})
  target_compile_options(rcl_cli_inproc PRIVATE ${REPROCL_WARNINGS} ${REPROCL_FP_FLAGS})
  target_compile_definitions(rcl_cli_inproc PRIVATE _POSIX_C_SOURCE=200809L main=rcl_cli_main)
  target_include_directories(rcl_cli_inproc PRIVATE ${PROJECT_SOURCE_DIR}/src/cli)
  target_link_libraries(rcl_cli_inproc PUBLIC reprocl_static PkgConfig::JANSSON PkgConfig::NETTLE m)
  target_link_libraries(test_failalloc PRIVATE rcl_cli_inproc)
  target_compile_definitions(test_failalloc PRIVATE REPROCL_HAVE_CLI=1)
endif()

# The leak canary of the sanitizer and valgrind jobs (scripts/ci-reliability.sh): not a ctest test,
# because its 'leak' mode must fail.
add_executable(leak_canary ${CMAKE_CURRENT_SOURCE_DIR}/sanitizers/leak_canary.c)
target_compile_options(leak_canary PRIVATE ${REPROCL_WARNINGS} ${REPROCL_FP_FLAGS})
target_compile_definitions(leak_canary PRIVATE _POSIX_C_SOURCE=200809L)
target_include_directories(leak_canary PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(leak_canary PRIVATE reprocl_static)
