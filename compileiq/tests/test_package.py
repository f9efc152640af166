import importlib.metadata
import pathlib

import compileiq


def test_version_matches_installed_metadata():
    assert compileiq.__version__ == importlib.metadata.version("compileiq")


def test_imported_from_an_installed_location_not_the_tests_folder():
    here = pathlib.Path(__file__).resolve().parent
    assert here not in pathlib.Path(compileiq.__file__).resolve().parents
