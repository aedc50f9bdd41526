# Writes a C file defining the bytes of a file as an array.
#   cmake -DINPUT=<file> -DOUTPUT=<file.c> -DSYMBOL=<name> -P embed_file.cmake
# Defines `const uint8_t <name>[]` (64-byte aligned) and
# `const size_t <name>_size`.
file(READ ${INPUT} _hex HEX)
string(LENGTH "${_hex}" _hex_length)
math(EXPR _size "${_hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f])"
       "\\1\n" _lines "${_hex}")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," _bytes "${_lines}")
get_filename_component(_name ${INPUT} NAME)
file(WRITE ${OUTPUT}
     "/* Generated from ${_name} by embed_file.cmake; do not edit. */\n"
     "#include <stddef.h>\n#include <stdint.h>\n\n"
     "__attribute__((aligned(64))) const uint8_t ${SYMBOL}[] = {\n${_bytes}};\n"
     "const size_t ${SYMBOL}_size = ${_size};\n")
