# Writes INPUT's bytes as a C array SYMBOL (plus SYMBOL_size) to OUTPUT.
file(READ ${INPUT} _hex HEX)
string(LENGTH "${_hex}" _len)
math(EXPR _size "${_len} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," _bytes "${_hex}")
string(REGEX REPLACE "((0x..,){16})" "\\1\n" _bytes "${_bytes}")
file(WRITE ${OUTPUT}
  "/* Generated from ${INPUT}; do not edit. */\n#include <stddef.h>\n"
  "_Alignas(16) const unsigned char ${SYMBOL}[] = {\n${_bytes}\n};\n"
  "const size_t ${SYMBOL}_size = ${_size};\n")
