# Source list of the pure C++17 protocol engine (no ns-3, Boost, spdlog, protobuf, clocks,
# threads or global state). Both build modes read this one file:
#   - standalone (top-level CMakeLists.txt): the static library `metaroce-engine`, and the
#     sanitizer test binary, which compiles these sources itself;
#   - inside an ns-3 tree (contrib/metaroce/CMakeLists.txt -> build_lib()).
# Keep the lists explicit (no globs) and sorted. A listed file that does not exist is skipped
# with a warning; a file in this folder that is not listed is reported at configure time. With
# no .cc files, metaroce-engine is an INTERFACE (header-only) target.

set(METAROCE_ENGINE_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-config.cc
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-congestion-control.cc
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-counters.cc
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-dcqcn.cc
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-encap.cc
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-endpoint.cc
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-icrc.cc
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-loss-detection.cc
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-memory.cc
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-multipath-connection.cc
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-multipath-acks.cc
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-multipath-read-atomic.cc
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-multipath-recovery.cc
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-multipath-requester.cc
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-multipath-responder.cc
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-path-scheduler.cc
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-path.cc
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-policy-names.cc
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-rate-hint.cc
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-rocev2-connection.cc
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-rocev2-go-back-n.cc
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-rocev2-irn.cc
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-rocev2-rate-control.cc
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-rocev2-recovery.cc
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-rocev2-requester.cc
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-rocev2-responder.cc
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-rtt-estimator.cc
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-transport-settings.cc
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-transport.cc
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-verbs.cc
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-wire.cc
)

set(METAROCE_ENGINE_HEADERS
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-byte-order.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-config.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-congestion-control.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-counters.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-datagram.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-dcqcn.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-encap.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-endpoint.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-icrc.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-loss-detection.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-memory.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-multipath-connection.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-multipath-requester.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-multipath-responder.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-multipath-role.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-observer.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-pacer.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-path-scheduler.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-path.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-policy-names.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-random.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-rate-hint.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-ring-queue.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-rocev2-connection.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-rocev2-go-back-n.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-rocev2-irn.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-rocev2-rate-control.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-rocev2-recovery.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-rocev2-requester.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-rocev2-responder.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-rocev2-role.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-rtt-estimator.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-time.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-timer-table.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-transport-settings.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-transport.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-verbs.h
    ${CMAKE_CURRENT_LIST_DIR}/metaroce-wire.h
)
