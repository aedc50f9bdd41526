# Shared by the bare-metal toolchain files: makes the header-only libraries
# the runtime uses (flatbuffers, for the VM's module schema) visible to the
# cross compilers without putting the host's /usr/include, and with it the
# host C library's headers, on their search path. Sets
# OSPREY_CROSS_INCLUDE_FLAGS for CMAKE_CXX_FLAGS_INIT.
set(_osprey_cross_include ${CMAKE_BINARY_DIR}/cross-include)
set(OSPREY_CROSS_INCLUDE_FLAGS "")
foreach(_dep flatbuffers)
  if(EXISTS /usr/include/${_dep})
    if(NOT EXISTS ${_osprey_cross_include}/${_dep})
      file(MAKE_DIRECTORY ${_osprey_cross_include})
      file(CREATE_LINK /usr/include/${_dep} ${_osprey_cross_include}/${_dep} SYMBOLIC)
    endif()
    set(OSPREY_CROSS_INCLUDE_FLAGS "-isystem ${_osprey_cross_include}")
  endif()
endforeach()
