# Install rules for the runtime: the embedding library with every runtime
# library it links (collected from the link graph once the whole tree is
# configured), the public headers, and an OspreyConfig.cmake so that
# applications can find_package(Osprey) and link Osprey::embed.
#
# Components: OspreyRuntime (libraries, headers, CMake package) and
# OspreyTools (osprey-run, osprey-benchmark, ...).

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Appends to |out_var| every non-imported library target reachable from
# |target| through its link libraries.
function(_osprey_collect_link_closure target out_var)
  set(_seen ${${out_var}})
  set(_queue ${target})
  while(_queue)
    list(POP_FRONT _queue _current)
    if(NOT TARGET ${_current} OR _current IN_LIST _seen)
      continue()
    endif()
    get_target_property(_imported ${_current} IMPORTED)
    if(_imported)
      continue()
    endif()
    get_target_property(_aliased ${_current} ALIASED_TARGET)
    if(_aliased)
      list(APPEND _queue ${_aliased})
      continue()
    endif()
    list(APPEND _seen ${_current})
    get_target_property(_type ${_current} TYPE)
    set(_deps "")
    if(NOT _type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(_link ${_current} LINK_LIBRARIES)
      if(_link)
        list(APPEND _deps ${_link})
      endif()
    endif()
    get_target_property(_ilink ${_current} INTERFACE_LINK_LIBRARIES)
    if(_ilink)
      list(APPEND _deps ${_ilink})
    endif()
    foreach(_dep ${_deps})
      # Strip generator expressions such as $<LINK_ONLY:x>.
      string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" _dep "${_dep}")
      if(TARGET ${_dep})
        list(APPEND _queue ${_dep})
      endif()
    endforeach()
  endwhile()
  set(${out_var} ${_seen} PARENT_SCOPE)
endfunction()

# Called (deferred) at the end of the top-level configure.
function(osprey_install_runtime)
  if(NOT TARGET osprey_embed)
    return()
  endif()
  set(_targets "")
  _osprey_collect_link_closure(osprey_embed _targets)

  # Interface include directories that point into the build tree (generated
  # headers) are only valid there; installed copies live under include/.
  foreach(_target ${_targets})
    get_target_property(_dirs ${_target} INTERFACE_INCLUDE_DIRECTORIES)
    if(NOT _dirs)
      continue()
    endif()
    set(_fixed "")
    foreach(_dir ${_dirs})
      if(_dir MATCHES "^\\$<" OR NOT _dir MATCHES "^${CMAKE_BINARY_DIR}")
        list(APPEND _fixed "${_dir}")
      else()
        list(APPEND _fixed "$<BUILD_INTERFACE:${_dir}>")
        install(DIRECTORY ${_dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
                COMPONENT OspreyRuntime FILES_MATCHING PATTERN "*.h")
      endif()
    endforeach()
    set_target_properties(${_target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_fixed}")
  endforeach()

  install(TARGETS ${_targets}
          EXPORT OspreyTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT OspreyRuntime
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT OspreyRuntime
          INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT OspreyTargets
          NAMESPACE Osprey::
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Osprey
          COMPONENT OspreyRuntime)

  # Runtime headers (the embedding API and the C++ runtime layers under it).
  foreach(_dir runtime/base runtime/embed runtime/modules hal vm drivers)
    if(EXISTS ${OSPREY_ROOT_DIR}/${_dir})
      install(DIRECTORY ${OSPREY_ROOT_DIR}/${_dir}/
              DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/${_dir}
              COMPONENT OspreyRuntime
              FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp"
              PATTERN "test" EXCLUDE PATTERN "cts" EXCLUDE)
    endif()
  endforeach()

  # Dependencies the exported targets name: Threads, and mimalloc when
  # the base library uses it.
  set(OSPREY_CONFIG_NEEDS_MIMALLOC OFF)
  if(TARGET mimalloc AND NOT OSPREY_BARE_METAL)
    set(OSPREY_CONFIG_NEEDS_MIMALLOC ON)
  endif()
  configure_package_config_file(
      ${OSPREY_ROOT_DIR}/cmake/OspreyConfig.cmake.in
      ${CMAKE_BINARY_DIR}/cmake/OspreyConfig.cmake
      INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Osprey)
  write_basic_package_version_file(
      ${CMAKE_BINARY_DIR}/cmake/OspreyConfigVersion.cmake
      VERSION ${PROJECT_VERSION}
      COMPATIBILITY SameMinorVersion)
  install(FILES ${CMAKE_BINARY_DIR}/cmake/OspreyConfig.cmake
                ${CMAKE_BINARY_DIR}/cmake/OspreyConfigVersion.cmake
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Osprey
          COMPONENT OspreyRuntime)
endfunction()
