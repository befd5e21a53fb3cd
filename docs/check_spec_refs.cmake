cmake_minimum_required(VERSION 3.25)
# docs.spec: every `§N` or `§N.M` cited in the tree's code, tests and docs must
# be a heading of docs/spec.md (`## §5 ...`, `### §7.2 ...`), and spec.md must
# keep the shared SPEC's structure: exactly §0-§12 plus §7.1-§7.5.
#   cmake -DSOURCE_DIR=<repository root> [-DSPEC=<path to spec.md>] -P check_spec_refs.cmake
# Scanned: core/ stores/ tck/ bench/ examples/ docs/ scripts/ README.md
# CHANGELOG.md — files *.h *.cc *.md *.py *.cmake *.txt *.sh — skipping any
# build/ directory and docs/benchmarks/ (generated). Test names that encode
# sections (Spec7_2_...) are checked by docs.conformance, not here.
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "pass -DSOURCE_DIR=<repository root>")
endif()
get_filename_component(SOURCE_DIR "${SOURCE_DIR}" ABSOLUTE)
if(NOT SPEC)
  set(SPEC "${SOURCE_DIR}/docs/spec.md")
endif()
if(NOT EXISTS "${SPEC}")
  message(FATAL_ERROR "${SPEC} does not exist: the behaviour contract must live in the repository")
endif()

# The section numbers spec.md gives headings to.
file(STRINGS "${SPEC}" heading_lines ENCODING UTF-8 REGEX "^#+ §")
set(headings "")
foreach(line IN LISTS heading_lines)
  if(line MATCHES "^#+ §([0-9]+(\\.[0-9]+)?)( |$)")
    list(APPEND headings "${CMAKE_MATCH_1}")
  endif()
endforeach()

set(errors "")
# Same structure as the shared SPEC: §0-§12, §7.1-§7.5, each exactly once.
set(expected 0 1 2 3 4 5 6 7 7.1 7.2 7.3 7.4 7.5 8 9 10 11 12)
foreach(s IN LISTS expected)
  list(FIND headings "${s}" at)
  if(at EQUAL -1)
    string(APPEND errors "  spec.md has no heading for §${s}\n")
  endif()
endforeach()
set(seen "")
foreach(s IN LISTS headings)
  if(NOT s IN_LIST expected)
    string(APPEND errors "  spec.md has a heading §${s}, which the shared SPEC does not have\n")
  endif()
  if(s IN_LIST seen)
    string(APPEND errors "  spec.md has more than one heading for §${s}\n")
  endif()
  list(APPEND seen "${s}")
endforeach()

# Every file that may cite a section.
set(files "")
foreach(dir core stores tck bench examples docs scripts)
  if(IS_DIRECTORY "${SOURCE_DIR}/${dir}")
    file(GLOB_RECURSE found LIST_DIRECTORIES false
      "${SOURCE_DIR}/${dir}/*.h" "${SOURCE_DIR}/${dir}/*.cc" "${SOURCE_DIR}/${dir}/*.md"
      "${SOURCE_DIR}/${dir}/*.py" "${SOURCE_DIR}/${dir}/*.cmake" "${SOURCE_DIR}/${dir}/*.txt"
      "${SOURCE_DIR}/${dir}/*.sh")
    list(APPEND files ${found})
  endif()
endforeach()
foreach(f README.md CHANGELOG.md)
  if(EXISTS "${SOURCE_DIR}/${f}")
    list(APPEND files "${SOURCE_DIR}/${f}")
  endif()
endforeach()

set(n_files 0)
set(n_cites 0)
foreach(f IN LISTS files)
  file(RELATIVE_PATH rel "${SOURCE_DIR}" "${f}")
  if(rel MATCHES "(^|/)build/" OR rel MATCHES "^docs/benchmarks/")
    continue()
  endif()
  math(EXPR n_files "${n_files} + 1")
  file(READ "${f}" text)
  # "§5", "§ 5", "§7.2", "§§5"; in "§2–§10" and "(§2, §6)" each § is its own.
  string(REGEX MATCHALL "(§)+ ?[0-9]+(\\.[0-9]+)?" cites "${text}")
  set(bad "")
  foreach(c IN LISTS cites)
    math(EXPR n_cites "${n_cites} + 1")
    string(REGEX REPLACE "^(§)+ ?" "" s "${c}")
    if(NOT s IN_LIST headings AND NOT s IN_LIST bad)
      list(APPEND bad "${s}")
    endif()
  endforeach()
  foreach(s IN LISTS bad)
    string(APPEND errors "  ${rel} cites §${s}, which is not a heading of docs/spec.md\n")
  endforeach()
endforeach()

if(n_cites EQUAL 0)
  string(APPEND errors "  no § citation found in ${n_files} files: the scan itself is broken\n")
endif()
if(errors)
  message(FATAL_ERROR "§ citations and docs/spec.md are out of step:\n${errors}")
endif()
list(LENGTH headings n_headings)
message(STATUS "docs/spec.md: ${n_headings} section headings; ${n_cites} § citations in ${n_files} files, all resolve")
