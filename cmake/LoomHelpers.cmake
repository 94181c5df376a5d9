# The project's only custom CMake functions.
include(GoogleTest)

# loom_library(NAME SRCS a.cc b.cc DEPS PUBLIC x PRIVATE y)
function(loom_library name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SRCS})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src ${PROJECT_BINARY_DIR}/src)
  if(ARG_DEPS)
    target_link_libraries(${name} ${ARG_DEPS})
  endif()
endfunction()

# Test sources are compiled without optimisation or debug info (LOOM_TEST_COMPILE_OPTIONS): a
# test file takes under half the time it takes at -O2 -g (job_view_test.cc: 12.6 s against 28.8 s),
# and compiling the tests is most of a clean build. The code under test keeps the build type's flags.
set(LOOM_TEST_COMPILE_OPTIONS -O0 -g0 CACHE STRING "Compile options of the test sources")

# loom_test(NAME DEPS lib... LABELS unit|integration|slow [TIMEOUT s] [SRCS files]
#           [PROPERTIES prop value...])
# The test source defaults to NAME.cc beside the calling CMakeLists.txt. PROPERTIES go to every
# discovered test case (e.g. FIXTURES_REQUIRED), which set_tests_properties cannot reach.
function(loom_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "DEPS;LABELS;SRCS;PROPERTIES" ${ARGN})
  if(NOT ARG_SRCS)
    set(ARG_SRCS ${name}.cc)
  endif()
  add_executable(${name} ${ARG_SRCS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  target_compile_options(${name} PRIVATE ${LOOM_TEST_COMPILE_OPTIONS})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  # Integration tests find the binary under test and the source tree (examples, scripts).
  target_compile_definitions(${name} PRIVATE
    LOOM_TEST_BINARY="$<TARGET_FILE:loom>" LOOM_TEST_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  gtest_discover_tests(${name}
    PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT} ${ARG_PROPERTIES}
    DISCOVERY_TIMEOUT 30)
endfunction()
