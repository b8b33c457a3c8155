# Source list of the ns-3 glue of the metaroce module (model/ and helper/). Both build modes
# read this file; see contrib/metaroce/CMakeLists.txt. Paths are absolute
# (${CMAKE_CURRENT_LIST_DIR}/model/..., ${CMAKE_CURRENT_LIST_DIR}/helper/...). While both lists
# are empty, the standalone `metaroce` target is an INTERFACE library over the engine and ns-3.

set(METAROCE_MODEL_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-frame.cc
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-net-device.cc
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-channel.cc
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-gilbert-elliott-error-model.cc
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-switch.cc
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-fabric.cc
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-nic.cc
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-nic-attributes.cc
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-partition.cc
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-huge-pages.cc
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-scheduler.cc
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-simulator-impl.cc
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-traffic-application.cc
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-flow-application.cc
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-collective-application.cc
    ${CMAKE_CURRENT_LIST_DIR}/helper/metaroce-pcap-helper.cc
    ${CMAKE_CURRENT_LIST_DIR}/helper/metaroce-topology-helper.cc
    ${CMAKE_CURRENT_LIST_DIR}/helper/metaroce-stack-helper.cc
    ${CMAKE_CURRENT_LIST_DIR}/helper/metaroce-traffic-helper.cc
    ${CMAKE_CURRENT_LIST_DIR}/helper/metaroce-workload-helper.cc
)

set(METAROCE_MODEL_HEADERS
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-frame.h
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-packet-fifo.h
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-port-owner.h
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-net-device.h
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-channel.h
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-gilbert-elliott-error-model.h
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-switch.h
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-fabric.h
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-nic.h
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-partition.h
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-huge-pages.h
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-scheduler.h
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-simulator-impl.h
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-ns3-compat.h
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-traffic-application.h
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-flow-application.h
    ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-collective-application.h
    ${CMAKE_CURRENT_LIST_DIR}/helper/metaroce-pcap-helper.h
    ${CMAKE_CURRENT_LIST_DIR}/helper/metaroce-topology-helper.h
    ${CMAKE_CURRENT_LIST_DIR}/helper/metaroce-stack-helper.h
    ${CMAKE_CURRENT_LIST_DIR}/helper/metaroce-traffic-helper.h
    ${CMAKE_CURRENT_LIST_DIR}/helper/metaroce-workload-helper.h
)

# Only with an ns-3 that has the mpi module (NS3_MPI=ON): links across MPI ranks
# (docs/distributed.md). Compiled with METAROCE_HAVE_MPI defined.
set(METAROCE_MPI_SOURCES ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-remote-channel.cc)
set(METAROCE_MPI_HEADERS ${CMAKE_CURRENT_LIST_DIR}/model/metaroce-remote-channel.h)
