# diagnose_bench: diagnosis of a 64-rank run with 10 MB of logs per rank.
# Included from bench/CMakeLists.txt: include(${CMAKE_CURRENT_SOURCE_DIR}/diagnose_bench.cmake)
find_package(benchmark REQUIRED)
add_executable(diagnose_bench ${CMAKE_CURRENT_LIST_DIR}/diagnose_bench.cc)
target_link_libraries(diagnose_bench PRIVATE fl::diagnose benchmark::benchmark)
target_include_directories(diagnose_bench PRIVATE ${PROJECT_SOURCE_DIR})
fl_target_warnings(diagnose_bench)

# Micro-benchmarks of the diagnose stage's hot parts (parsers, classifiers, timeline).
add_executable(diagnose_micro_bench ${CMAKE_CURRENT_LIST_DIR}/diagnose_micro_bench.cc)
target_link_libraries(diagnose_micro_bench PRIVATE fl::diagnose benchmark::benchmark)
target_include_directories(diagnose_micro_bench PRIVATE ${PROJECT_SOURCE_DIR})
fl_target_warnings(diagnose_micro_bench)
