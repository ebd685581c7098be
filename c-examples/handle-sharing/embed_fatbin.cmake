# cmake -DIN=<file> -DOUT=<file.c> -DNAME=<symbol> -P embed_fatbin.cmake: writes a C file
# defining `const unsigned char NAME[]` (16-byte aligned) and `const unsigned long NAME_size`.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" len)
math(EXPR size "${len} / 2")
if(size EQUAL 0)
  message(FATAL_ERROR "${IN} is empty")
endif()
set(body "")
set(pos 0)
while(pos LESS len)
  string(SUBSTRING "${hex}" ${pos} 32 line)  # 16 bytes a line
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," line "${line}")
  string(APPEND body "  ${line}\n")
  math(EXPR pos "${pos} + 32")
endwhile()
file(WRITE "${OUT}.tmp"
  "/* Generated from ${IN} by embed_fatbin.cmake; do not edit. */\n"
  "__attribute__((aligned(16))) const unsigned char ${NAME}[] = {\n${body}};\n"
  "const unsigned long ${NAME}_size = ${size}ul;\n")
file(RENAME "${OUT}.tmp" "${OUT}")
