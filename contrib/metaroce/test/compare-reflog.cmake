# Run PROGRAM with ARGS (a ;-list) and compare its standard output with REFLOG, as ns-3's
# ExampleAsTestSuite does in an ns-3 tree (contrib/metaroce/test/metaroce-examples-test-suite.cc).
#   cmake -DPROGRAM=... -DARGS=... -DREFLOG=... -P compare-reflog.cmake
execute_process(
    COMMAND ${PROGRAM} ${ARGS}
    OUTPUT_VARIABLE out
    RESULT_VARIABLE rc
)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${PROGRAM} ${ARGS} exited with ${rc}")
endif()
file(READ ${REFLOG} ref)
if(NOT out STREQUAL ref)
    message(FATAL_ERROR "output of ${PROGRAM} ${ARGS} differs from ${REFLOG}:\n--- got\n${out}--- expected\n${ref}"
                        "(after an intended change of output, update the log: run the program "
                        "with these arguments and save its output there)")
endif()
