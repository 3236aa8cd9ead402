#!/usr/bin/env bash
# Build llama.cpp's own OpenAI-compatible server, llama-server, from the llama.cpp
# that llama-cpp-python 0.3.16 vendors (its sdist on PyPI), for bench/served.py:
# several slots, each with its own prompt cache, and log-probabilities that reuse it.
# Linked statically (it is copied out of its build tree). About 4 min on two cores.
# Usage: bench/build_llama_server.sh OUT (the binary's path).
set -euo pipefail
out="$1"
python="${PYTHON:-python3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$python" -m pip download --quiet --no-deps --no-binary :all: llama-cpp-python==0.3.16 -d "$work"
tar -xzf "$work"/llama_cpp_python-0.3.16.tar.gz -C "$work"
src="$work/llama_cpp_python-0.3.16/vendor/llama.cpp"
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DBUILD_SHARED_LIBS=OFF >/dev/null
cmake --build "$work/build" --target llama-server -j "$(nproc)" >/dev/null
mkdir -p "$(dirname "$out")"
cp "$work/build/bin/llama-server" "$out"
"$out" --version >/dev/null 2>&1 || { echo "built $out, but it does not run" >&2; rm -f "$out"; exit 1; }
echo "built $out"
