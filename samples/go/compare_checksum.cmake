# ctest go_sample_checksum: the Go sample and the C CLI train LeNet with the same settings and must end with
# the same param_checksum (bitwise identical parameters).
# Usage: cmake -DCLI=path/to/dptrain -DGO_SAMPLE=path/to/dptrain_go_sample -P compare_checksum.cmake
set(settings --epochs 1 --train-limit 2000 --test-limit 500 --seed 3)
execute_process(COMMAND ${CLI} train --model lenet --devices cpu:2 ${settings} --json
                OUTPUT_VARIABLE cli_out ERROR_VARIABLE cli_err RESULT_VARIABLE cli_rc)
if(NOT cli_rc EQUAL 0)
  message(FATAL_ERROR "the C CLI failed (${cli_rc}):\n${cli_err}")
endif()
string(REGEX MATCH "\"param_checksum\":\"([0-9a-f]+)\"" _ "${cli_out}")
set(cli_sum "${CMAKE_MATCH_1}")

# Go's flag package takes the same flags with one dash.
string(REPLACE "--" "-" go_settings "${settings}")
execute_process(COMMAND ${GO_SAMPLE} -devices 2 ${go_settings}
                OUTPUT_VARIABLE go_out ERROR_VARIABLE go_err RESULT_VARIABLE go_rc)
message(STATUS "Go sample output:\n${go_out}")
if(NOT go_rc EQUAL 0)
  message(FATAL_ERROR "the Go sample failed (${go_rc}):\n${go_err}")
endif()
string(REGEX MATCH "param_checksum ([0-9a-f]+)" _ "${go_out}")
set(go_sum "${CMAKE_MATCH_1}")

if(NOT cli_sum MATCHES "^[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]$")
  message(FATAL_ERROR "no 16-digit param_checksum in the CLI's JSON:\n${cli_out}")
endif()
if(NOT go_sum STREQUAL cli_sum)
  message(FATAL_ERROR "param_checksum differs: C CLI ${cli_sum}, Go sample '${go_sum}'")
endif()
message(STATUS "param_checksum ${go_sum}: Go sample == C CLI")
