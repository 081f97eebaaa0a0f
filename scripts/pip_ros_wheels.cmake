# Included by scripts/build_interfaces.sh (CMAKE_PROJECT_INCLUDE) when a ROS 2 interface package is
# built against the ROS 2 wheels from PyPI rather than a ROS 2 install.
#
# Those wheels' exported `*__rosidl_generator_py` targets (service_msgs, builtin_interfaces, ...)
# name the include folders of the interpreter the wheels were built with
# (/opt/python/cp3XX-cp3XX/include/python3.X and its numpy), which exist on no other machine, and
# CMake refuses to generate build files for a target whose dependency names a missing include
# folder. At the end of the top-level CMakeLists.txt (once rosidl_generate_interfaces has imported
# every dependency's targets) this drops such folders from the imported targets; the package's own
# targets get this machine's Python and numpy headers from FindPython3. Every dropped folder is
# printed. On a ROS 2 install no folder is missing and nothing changes.
if(CMAKE_VERSION VERSION_LESS 3.19)
  message(FATAL_ERROR "pip_ros_wheels.cmake needs CMake >= 3.19 (cmake_language(DEFER)); found ${CMAKE_VERSION}")
endif()

function(_rgbt_drop_missing_include_dirs)
  get_directory_property(targets IMPORTED_TARGETS)
  foreach(target IN LISTS targets)
    get_target_property(dirs ${target} INTERFACE_INCLUDE_DIRECTORIES)
    if(NOT dirs)
      continue()
    endif()
    set(kept "")
    foreach(dir IN LISTS dirs)
      if(dir MATCHES "\\$<" OR EXISTS "${dir}")
        list(APPEND kept "${dir}")
      else()
        message(STATUS "pip ROS wheels: ${target}: dropped the missing include folder ${dir}")
      endif()
    endforeach()
    set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${kept}")
  endforeach()
endfunction()

cmake_language(DEFER CALL _rgbt_drop_missing_include_dirs)
