# The front end (web/, an npm project): built with esbuild into the build tree and compiled into
# `loom` as loom::web::kEmbeddedAssets (src/web/embedded_assets.h), the static library
# loom_web_assets. Nothing is written into the source tree but web/node_modules:
#
#   ${CMAKE_BINARY_DIR}/web/npm-ci.stamp         when `npm ci` last ran
#   ${CMAKE_BINARY_DIR}/web/dist/                index.html, assets/app.js, assets/app.css
#   ${CMAKE_BINARY_DIR}/web/embedded_assets.cc   every file of dist as a byte array (web/embed.mjs)
#
# `npm ci` runs when web/node_modules is missing or web/package-lock.json changed: every build
# asks this same file, in script mode, which costs a stat or two. `npm run build` runs when a
# file under web/src, web/build.mjs or the lock changed (or npm ci ran). LOOM_WEB_DIST, a page
# already built elsewhere, skips npm altogether (for a machine without Node.js).

if(CMAKE_SCRIPT_MODE_FILE)
  # cmake -DWEB_DIR=... -DSTAMP=... -DNPM=... -P WebAssets.cmake: npm ci where needed.
  set(lock ${WEB_DIR}/package-lock.json)
  set(installed ${WEB_DIR}/node_modules/.package-lock.json)
  if(NOT EXISTS ${installed} OR NOT EXISTS ${STAMP} OR ${lock} IS_NEWER_THAN ${STAMP})
    message(STATUS "web: npm ci in ${WEB_DIR}")
    execute_process(COMMAND ${NPM} ci --no-audit --no-fund --loglevel=error
                    WORKING_DIRECTORY ${WEB_DIR} RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "web: npm ci failed in ${WEB_DIR} (${rc}); scripts/setup-web.sh installs Node.js and npm")
    endif()
    file(TOUCH ${STAMP})
  endif()
  return()
endif()

set(LOOM_WEB_DIST "" CACHE PATH "A built page (web/dist) to embed as it is, instead of building web/ with npm")
find_program(LOOM_NODE NAMES node nodejs REQUIRED)
set(LOOM_WEB_SOURCE_DIR ${PROJECT_SOURCE_DIR}/web)
set(LOOM_WEB_BINARY_DIR ${CMAKE_BINARY_DIR}/web)
set(LOOM_WEB_EMBEDDED ${LOOM_WEB_BINARY_DIR}/embedded_assets.cc)

if(LOOM_WEB_DIST)
  set(dist ${LOOM_WEB_DIST})
  file(GLOB_RECURSE dist_files CONFIGURE_DEPENDS ${dist}/*)
else()
  find_program(LOOM_NPM npm REQUIRED)
  set(dist ${LOOM_WEB_BINARY_DIR}/dist)
  set(dist_files ${dist}/index.html ${dist}/assets/app.js ${dist}/assets/app.css)
  set(stamp ${LOOM_WEB_BINARY_DIR}/npm-ci.stamp)
  file(GLOB_RECURSE web_sources CONFIGURE_DEPENDS ${LOOM_WEB_SOURCE_DIR}/src/*)
  # Runs on every build; touches the stamp (and so rebuilds the page) only when npm ci ran.
  add_custom_target(loom_web_npm_ci
    COMMAND ${CMAKE_COMMAND} -DWEB_DIR=${LOOM_WEB_SOURCE_DIR} -DSTAMP=${stamp} -DNPM=${LOOM_NPM}
            -P ${CMAKE_CURRENT_LIST_FILE}
    BYPRODUCTS ${stamp}
    VERBATIM)
  add_custom_command(
    OUTPUT ${dist_files}
    COMMAND ${LOOM_NPM} run build --silent -- --outdir ${dist}
    DEPENDS ${web_sources} ${LOOM_WEB_SOURCE_DIR}/build.mjs ${LOOM_WEB_SOURCE_DIR}/package.json
            ${LOOM_WEB_SOURCE_DIR}/package-lock.json ${stamp} loom_web_npm_ci
    WORKING_DIRECTORY ${LOOM_WEB_SOURCE_DIR}
    COMMENT "web: building the page into ${dist}"
    VERBATIM)
endif()

add_custom_command(
  OUTPUT ${LOOM_WEB_EMBEDDED}
  COMMAND ${LOOM_NODE} ${LOOM_WEB_SOURCE_DIR}/embed.mjs ${dist} ${LOOM_WEB_EMBEDDED}
  DEPENDS ${dist_files} ${LOOM_WEB_SOURCE_DIR}/embed.mjs
  COMMENT "web: embedding ${dist}"
  VERBATIM)
add_custom_target(loom_web_page DEPENDS ${LOOM_WEB_EMBEDDED})
set(LOOM_WEB_DIST_DIR ${dist})  # the page as built (tests/browser serves it)

add_library(loom_web_assets STATIC ${LOOM_WEB_EMBEDDED})
target_include_directories(loom_web_assets PUBLIC ${PROJECT_SOURCE_DIR}/src)
add_dependencies(loom_web_assets loom_web_page)
