import pytest

from lib import LIB_PATH, load


@pytest.fixture(scope="session")
def lib():
    if not LIB_PATH.exists():
        pytest.fail(f"{LIB_PATH} is missing: run `make test` (it builds it)")
    return load()
