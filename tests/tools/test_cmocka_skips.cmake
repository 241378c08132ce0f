# The test of tools/cmocka_skips.cmake (CTest: cmocka_skips_rule): a binary that failed fails, whatever it
# skipped; one that passed and skipped prints the line the tests' SKIP_REGULAR_EXPRESSION matches; one that
# passed without skipping passes silently.
#
#   cmake -P test_cmocka_skips.cmake
set(wrapper ${CMAKE_CURRENT_LIST_DIR}/cmocka_skips.cmake)
set(marker "cmocka_skips: some cases skipped")
set(failures 0)

# expect_rc: 0 or "nonzero"; expect_marker: TRUE or FALSE; ARGN: the command the wrapper runs.
function(check what expect_rc expect_marker)
  execute_process(COMMAND ${CMAKE_COMMAND} -P ${wrapper} -- ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE out)
  string(FIND "${out}" "${marker}" at)
  set(marked FALSE)
  if(NOT at EQUAL -1)
    set(marked TRUE)
  endif()
  set(ok TRUE)
  if(expect_rc STREQUAL "0" AND NOT rc STREQUAL "0")
    set(ok FALSE)
  elseif(expect_rc STREQUAL "nonzero" AND rc STREQUAL "0")
    set(ok FALSE)
  endif()
  if(NOT marked STREQUAL expect_marker)
    set(ok FALSE)
  endif()
  if(ok)
    message("ok: ${what}")
  else()
    message("FAIL: ${what}: exit status ${rc}, marker ${marked}; output:\n${out}")
    math(EXPR n "${failures} + 1")
    set(failures ${n} PARENT_SCOPE)
  endif()
endfunction()

check("a failed case beside a skipped one fails" nonzero FALSE sh -c "echo '[  SKIPPED ] a' && exit 1")
check("a failed binary fails" nonzero FALSE sh -c "echo '[  FAILED  ] b' && exit 3")
check("skipped cases, none failed: the skip line" 0 TRUE sh -c "echo '[  SKIPPED ] a'")
check("every case passed: no skip line" 0 FALSE sh -c "echo '[  PASSED  ] 2 test(s).'")
if(NOT failures EQUAL 0)
  message(FATAL_ERROR "${failures} check(s) of cmocka_skips.cmake failed")
endif()
