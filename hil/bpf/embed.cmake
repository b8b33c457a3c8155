# Writes OUTPUT, a C++ header holding the bytes of INPUT as the array NAME:
#   cmake -DINPUT=file.o -DOUTPUT=file.h -DNAME=ARRAY -P embed.cmake
file(READ "${INPUT}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUTPUT}"
     "// Generated from ${INPUT} by hil/bpf/embed.cmake: do not edit.\n#pragma once\n"
     "alignas(8) static const unsigned char ${NAME}[] = {${bytes}};\n"
)
