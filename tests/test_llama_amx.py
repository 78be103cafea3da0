"""On a llama.cpp build that uses Intel AMX, weights load without llama.cpp's extra buffer types (its AMX layout
segfaulted in the first decode there); on every other build the load parameters are llama.cpp's defaults."""

from __future__ import annotations

import types

import llama_cpp
import pytest

from localjudge.engine.llama_amx import amx_build, no_amx_weights


def fake_build(info: bytes) -> types.SimpleNamespace:
    """The two things read of llama_cpp: its system info and its low-level module's default model parameters."""
    low = types.SimpleNamespace(llama_model_default_params=llama_cpp.llama_model_default_params)
    return types.SimpleNamespace(llama_print_system_info=lambda: info, llama_cpp=low)


def test_an_amx_build_loads_weights_without_extra_buffer_types_and_restores_the_defaults_after():
    build = fake_build(b"CPU : AVX2 = 1 | AMX_INT8 = 1 | REPACK = 1 | ")
    assert amx_build(build)
    with no_amx_weights(build):
        assert build.llama_cpp.llama_model_default_params().use_extra_bufts is False
    assert build.llama_cpp.llama_model_default_params is llama_cpp.llama_model_default_params
    assert build.llama_cpp.llama_model_default_params().use_extra_bufts is True


def test_a_build_without_amx_keeps_llama_cpps_defaults():
    build = fake_build(b"CPU : AVX2 = 1 | REPACK = 1 | ")
    assert not amx_build(build)
    with no_amx_weights(build):
        assert build.llama_cpp.llama_model_default_params().use_extra_bufts is True


@pytest.mark.system
def test_the_installed_build_decodes_with_the_default_model(engine):
    # on an AMX machine this process segfaulted here before (ggml_backend_amx_mul_mat)
    from localjudge.engine import Message
    from localjudge.engine.base import DecodeOptions
    from localjudge.formats import JSONSchemaFormat

    fmt = JSONSchemaFormat({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})
    gen = engine.generate([Message(role="user", content="Give a number.")], fmt, DecodeOptions(max_tokens=16))
    assert gen.text.startswith('{"a": ')
