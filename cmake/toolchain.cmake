# The QuickJS backend's WebAssembly interpreter (WAMR) fetches `simde` from the
# internet at configure time. Point CMake's FetchContent at Debian's
# `libsimde-dev` headers instead, so the build works offline.
set(FETCHCONTENT_SOURCE_DIR_SIMDE "/usr/include" CACHE PATH "")
