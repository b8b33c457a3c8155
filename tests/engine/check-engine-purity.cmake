# Checks that the protocol engine stays sans-I/O and host-independent (docs/design: "the engine
# is sans-I/O"): no ns-3, Boost, spdlog or protobuf headers, no clocks, no ambient randomness,
# no threads, no simulator calls.
#
# Usage:
#   cmake -DENGINE_DIR=<contrib/metaroce/engine> -P check-engine-purity.cmake
#   cmake -DSELF_TEST=ON -DWORK_DIR=<scratch dir> -P check-engine-purity.cmake
#
# Each violation is reported as `file:line: <rule>: <code>` and the script fails. Comments are
# not checked: text after `//` and lines that start with `*` or `/*` (Doxygen and block
# comments) may name forbidden things, e.g. to explain why they are forbidden.

cmake_minimum_required(VERSION 3.16)

# Rules: a name and a regular expression, applied to each code line.
set(RULE_NAMES
    "includes an ns-3 header"
    "includes a Boost header"
    "includes an spdlog header"
    "includes a protobuf header"
    "includes <thread>"
    "reads a clock (steady_clock)"
    "reads a clock (system_clock)"
    "reads a clock (high_resolution_clock)"
    "uses ambient randomness (std::random_device)"
    "uses ambient randomness (rand())"
    "reads the time (time())"
    "uses threads (std::thread)"
    "calls the ns-3 simulator (Simulator::)"
)
set(RULE_PATTERNS
    "#[ \t]*include[ \t]*[<\"]ns3/"
    "#[ \t]*include[ \t]*[<\"]boost/"
    "#[ \t]*include[ \t]*[<\"]spdlog/"
    "#[ \t]*include[ \t]*[<\"]google/protobuf"
    "#[ \t]*include[ \t]*<thread>"
    "steady_clock"
    "system_clock"
    "high_resolution_clock"
    "random_device"
    "(^|[^A-Za-z0-9_])s?rand[ \t]*\\("
    "(^|[^A-Za-z0-9_.>])time\\("
    "std::j?thread([^A-Za-z0-9_]|$)"
    "Simulator::"
)

# Placeholders for the characters that CMake lists treat specially.
set(SEMI "@METAROCE_SEMI@")
set(LBR "@METAROCE_LBR@")
set(RBR "@METAROCE_RBR@")
set(BSL "@METAROCE_BSL@")

# Appends "file:line: rule: code" to the list named by out_var for each violation in dir.
function(check_dir dir out_var)
    file(
        GLOB_RECURSE files
        LIST_DIRECTORIES false
        "${dir}/*.h"
        "${dir}/*.hh"
        "${dir}/*.hpp"
        "${dir}/*.cc"
        "${dir}/*.cpp"
        "${dir}/*.cxx"
        "${dir}/*.ipp"
        "${dir}/*.inl"
        "${dir}/*.tcc"
    )
    list(SORT files)
    list(LENGTH RULE_NAMES rule_count)
    math(EXPR last_rule "${rule_count} - 1")
    set(found)
    foreach(file IN LISTS files)
        file(READ "${file}" content)
        string(REPLACE "\\" "${BSL}" content "${content}")
        string(REPLACE ";" "${SEMI}" content "${content}")
        string(REPLACE "[" "${LBR}" content "${content}")
        string(REPLACE "]" "${RBR}" content "${content}")
        string(REPLACE "\r" "" content "${content}")
        string(REPLACE "\n" ";" lines "${content}")
        file(RELATIVE_PATH shown "${dir}" "${file}")
        set(number 0)
        foreach(line IN LISTS lines)
            math(EXPR number "${number} + 1")
            if(line MATCHES "^[ \t]*(\\*|/\\*)")
                continue()
            endif()
            string(REGEX REPLACE "//.*$" "" code "${line}")
            foreach(i RANGE ${last_rule})
                list(GET RULE_PATTERNS ${i} pattern)
                if(code MATCHES "${pattern}")
                    list(GET RULE_NAMES ${i} rule)
                    string(STRIP "${line}" text)
                    # Still holds the placeholders; report() restores the characters.
                    list(APPEND found "${dir}/${shown}:${number}: ${rule}: ${text}")
                endif()
            endforeach()
        endforeach()
    endforeach()
    list(LENGTH files file_count)
    set(${out_var} "${found}" PARENT_SCOPE)
    set(${out_var}_FILES ${file_count} PARENT_SCOPE)
endfunction()

function(report violations)
    set(message "")
    foreach(v IN LISTS violations)
        string(APPEND message "${v}\n")
    endforeach()
    string(REPLACE "${SEMI}" ";" message "${message}")
    string(REPLACE "${LBR}" "[" message "${message}")
    string(REPLACE "${RBR}" "]" message "${message}")
    string(REPLACE "${BSL}" "\\" message "${message}")
    message("${message}")
endfunction()

if(SELF_TEST)
    # Checks the checker: a fixture with one violation per rule and clean look-alikes.
    if(NOT WORK_DIR)
        message(FATAL_ERROR "SELF_TEST needs -DWORK_DIR=<directory>")
    endif()
    file(REMOVE_RECURSE "${WORK_DIR}")
    file(
        WRITE "${WORK_DIR}/bad.cc"
        [=[#include "ns3/simulator.h"
#include <boost/asio.hpp>
#include "spdlog/spdlog.h"
#include <google/protobuf/message.h>
#include <thread>
auto a = std::chrono::steady_clock::now(); int x[2] = {1, 2};
auto b = std::chrono::system_clock::now();
auto c = std::chrono::high_resolution_clock::now();
std::random_device rd;
int r = std::rand() % 7; // a [ bracket
auto t = time(nullptr);
std::thread worker;
ns3::Simulator::Now();
]=]
    )
    file(
        WRITE "${WORK_DIR}/clean.h"
        [=[// Never use steady_clock or Simulator:: here; the caller passes `now`.
/**
 * Unlike rand() or time(), the engine takes randomness from the host.
 */
#include <chrono>
#include <random>
uint32_t operand(uint32_t x); Time now = packet.time(); int brand(int x);
std::mt19937 rng(seed); // std::random_device would be ambient
]=]
    )
    check_dir("${WORK_DIR}" violations)
    list(LENGTH violations count)
    list(LENGTH RULE_NAMES expected)
    set(ok TRUE)
    if(NOT count EQUAL expected)
        set(ok FALSE)
    endif()
    foreach(line RANGE 1 ${expected})
        if(NOT violations MATCHES "bad.cc:${line}: ")
            set(ok FALSE)
        endif()
    endforeach()
    if(violations MATCHES "clean.h")
        set(ok FALSE)
    endif()
    if(NOT ok)
        report("${violations}")
        message(
            FATAL_ERROR
                "engine purity self-test: expected exactly one violation on each of lines "
                "1..${expected} of bad.cc and none in clean.h; got ${count} (listed above)"
        )
    endif()
    message(STATUS "engine purity self-test: all ${expected} rules detected, no false positives")
    return()
endif()

if(NOT ENGINE_DIR OR NOT IS_DIRECTORY "${ENGINE_DIR}")
    message(
        FATAL_ERROR
            "usage: cmake -DENGINE_DIR=<contrib/metaroce/engine> -P ${CMAKE_CURRENT_LIST_FILE}"
    )
endif()
check_dir("${ENGINE_DIR}" violations)
if(violations)
    list(LENGTH violations count)
    report("${violations}")
    message(
        FATAL_ERROR
            "engine purity: ${count} violation(s) listed above. The engine must stay pure C++17 "
            "with no ns-3, Boost, spdlog or protobuf headers, no clocks (take `now` as an "
            "argument), no ambient randomness (take a seeded generator from the host) and no "
            "threads."
    )
endif()
message(STATUS "engine purity: ${violations_FILES} files in ${ENGINE_DIR} are clean")
