import pytest

from helpers.hostlib import LIB_PATH, load


@pytest.fixture(scope="session")
def lib():
    if not LIB_PATH.exists():
        pytest.fail(f"{LIB_PATH} is missing: run `make test` (it builds it)")
    return load()


@pytest.fixture(autouse=True)
def _own_store(tmp_path, monkeypatch):
    """No host test writes to the developer's store of runs (build/clockbench.db):
    every command that stores a run gets --store's default from here."""
    from clockbench.runs import store

    monkeypatch.setattr(store, "DEFAULT", tmp_path / "default-store.db")
    monkeypatch.setenv("CLOCKBENCH_STORE", str(tmp_path / "default-store.db"))
