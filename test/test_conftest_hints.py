"""The skip reasons of tests that need an optional package say which extra brings it (conftest.install_hint)."""
from conftest import install_hint


def test_a_missing_optional_package_names_its_extra():
    reason = "could not import 'rclpy': No module named 'rclpy'"
    assert install_hint(reason) == reason + " (the ros extra: pip install '.[ros]', or source a ROS 2 installation)"
    assert install_hint("Skipped: could not import 'rasterio.crs': No module named 'rasterio'").endswith("'.[geo]')")


def test_other_reasons_are_unchanged():
    for reason in ("could not import 'numpy': No module named 'numpy'", 'needs CUDA', ''):
        assert install_hint(reason) == reason
