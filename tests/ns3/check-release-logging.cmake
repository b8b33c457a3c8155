# Checks that the module's hot paths pay nothing for NS_LOG in an optimized build (issue 20):
# the library must call no ns3::LogComponent::IsEnabled. Debian's ns-3 is built with logging
# compiled in, but NS_LOG_* in our code expand to nothing unless NS3_LOG_ENABLE is defined,
# which the build does only for Debug (CMakeLists.txt); a NS_LOG left enabled would cost a call
# per use on every packet.
#
# Usage: cmake -DLIBRARY=<libmetaroce.so> -DNM=<nm> -P check-release-logging.cmake

cmake_minimum_required(VERSION 3.16)

execute_process(
    COMMAND ${NM} -DC ${LIBRARY}
    OUTPUT_VARIABLE symbols
    RESULT_VARIABLE status
)
if(NOT status EQUAL 0)
    message(FATAL_ERROR "${NM} failed on ${LIBRARY}")
endif()
string(REGEX MATCHALL "[^\n]*LogComponent::IsEnabled[^\n]*" uses "${symbols}")
if(uses)
    message(FATAL_ERROR "${LIBRARY} calls NS_LOG's LogComponent::IsEnabled in an optimized "
                        "build: ${uses}")
endif()
message(STATUS "${LIBRARY}: no LogComponent::IsEnabled")
