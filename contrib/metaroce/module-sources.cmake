# Source list of the ns-3 glue of the metaroce module (model/ and helper/). Both build modes
# read this file; see contrib/metaroce/CMakeLists.txt. Paths are absolute
# (${CMAKE_CURRENT_LIST_DIR}/model/..., ${CMAKE_CURRENT_LIST_DIR}/helper/...). While both lists
# are empty, the standalone `metaroce` target is an INTERFACE library over the engine and ns-3.

set(METAROCE_MODEL_SOURCES
)

set(METAROCE_MODEL_HEADERS
)
