"""A Flink home of another version than this machine's, fetched from the package index into the cache (real pip,
real registry): unpacked whole, found again without a second download, and refused in one line when it cannot be."""

from __future__ import annotations

import pytest

from placement.errors import PlacementError
from placement.flink.distribution import cached_home, distributions_dir, fetch, flink_home_for, release_for
from placement.flink.home import find_flink_home

pytestmark = pytest.mark.flink  # a 230 MB Flink distribution from the package index: not the inner loop

OTHER = "1.20.5"  # an sdist (deps/ layout); the wheel layout (pyflink/) is this machine's own 2.3 and 2.2's


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        path = tmp_path_factory.mktemp("cache")
        mp.setenv("PLACEMENT_CACHE_DIR", str(path))
        yield path


def test_another_version_is_fetched_once_and_holds_a_whole_home(cache):
    home = flink_home_for(OTHER)
    assert home.path == distributions_dir() / OTHER and home.path.is_relative_to(cache)
    assert home.version == OTHER
    assert (home.lib / f"flink-dist-{OTHER}.jar").stat().st_size > 100 << 20
    assert home.bash_java_utils.is_file()
    assert list((home.path / "plugins" / "metrics-prometheus").glob("flink-metrics-prometheus-*.jar"))
    assert sorted(p.name for p in home.path.iterdir()) == ["bin", "lib", "opt", "plugins"]
    assert [p.name for p in (cache / "flink").iterdir()] == [OTHER]  # no staging directory left
    inode = (home.lib / f"flink-dist-{OTHER}.jar").stat().st_ino
    again = flink_home_for(OTHER)  # from the cache: the same files, not a second download
    assert again == home and (again.lib / f"flink-dist-{OTHER}.jar").stat().st_ino == inode


def test_this_machines_own_version_is_not_fetched(cache):
    local = find_flink_home()
    assert flink_home_for(local.version) == local
    assert cached_home(local.version) is None


def test_a_version_the_index_lacks_is_one_line_naming_it(cache):
    with pytest.raises(PlacementError) as err:
        fetch("1.20.99")
    message = str(err.value)
    assert message.startswith("Flink 1.20.99: cannot fetch apache-flink-libraries==1.20.99 from the package index (")
    assert "\n" not in message
    assert cached_home("1.20.99") is None and not list((cache / "flink").glob(".fetch-*"))


def test_an_unsupported_version_is_refused_before_any_download(cache):
    with pytest.raises(
        PlacementError,
        match=r"^inventory.yaml: flink.version: Flink 1.18.1 is not supported "
        r"\(supported: 1.19, 1.20, 2.0, 2.1, 2.2, 2.3\)$",
    ):
        flink_home_for("1.18.1", where="inventory.yaml: flink.version")
    assert cached_home("1.18.1") is None


def test_a_release_line_means_its_newest_release_in_the_index_and_a_release_means_itself(cache):
    assert release_for("1.20") == "1.20.5"  # the registry holds 1.20.0 to 1.20.5
    assert release_for("2.0") == "2.0.2"
    assert release_for("1.20.3") == "1.20.3"  # an older release of the line, as asked
    local = find_flink_home()
    line = ".".join(local.version.split(".")[:2])
    assert release_for(line) == local.version  # this machine's own Flink: nothing to fetch
    assert cached_home("2.0.2") is None and cached_home("1.20.3") is None  # asking the index downloads nothing


def test_offline_a_release_line_is_the_newest_release_in_the_cache(cache, monkeypatch):
    flink_home_for(OTHER)  # in this module's cache (first test: fetched with pip)
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # pip sees no index at all: offline
    assert release_for("1.20") == OTHER
    with pytest.raises(
        PlacementError,
        match=r"^--flink-version: no Flink 1\.19 release found in the package index "
        r"\(apache-flink-libraries\) or the cache; give the exact release, "
        r"e\.g\. 1\.19\.0$",
    ):
        release_for("1.19")
