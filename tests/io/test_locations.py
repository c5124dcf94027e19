"""A path or URI parsed once: :class:`sparkfs.io.stores.Location` says what the store functions say."""

import os

import pytest

from sparkfs.io.stores import Location, absolute_path, is_local_path, local_path_of, location_of, place_of

GIVEN = ["out/run1", "/abs/run", "file:///tmp/x", "file:/tmp/x", "file://localhost/tmp/x", "file://host/x",
         "hdfs://NN:8020/a/../b/", "s3a://bucket/x", "dbfs:/x", "link/../d"]


@pytest.mark.parametrize("text", GIVEN)
def test_a_location_holds_what_the_store_functions_say(text):
    location = location_of(text)
    assert (location.text, str(location)) == (text, text)
    assert location.plain == is_local_path(text)
    assert location.local == local_path_of(text)
    assert location.place == place_of(text)


def test_a_location_is_made_once():
    location = location_of("out/run1")
    assert location_of(location) is location
    assert location.local == absolute_path("out/run1")
    with pytest.raises(AttributeError):
        location.text = "elsewhere"


def test_a_location_resolves_link_dot_dot_as_the_system_does(tmp_path, monkeypatch):
    (tmp_path / "a" / "b").mkdir(parents=True)
    os.symlink(tmp_path / "a" / "b", tmp_path / "link")
    monkeypatch.chdir(tmp_path)
    assert location_of("link/../d").local == str(tmp_path / "a" / "d")


def test_a_local_location_spelled_as_its_path():
    spelled = location_of("file:///tmp/x/../y").as_local()
    assert spelled == Location("/tmp/y", True, "/tmp/y")
    assert spelled.place == place_of("/tmp/y")
