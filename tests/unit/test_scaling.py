"""Coordinate spaces: choosing the API resolution and scaling points between spaces."""

from __future__ import annotations

from askcache.foundation.scaling import api_resolution, same_aspect, scale_point, scale_step_input


def test_api_resolution_by_aspect_ratio() -> None:
    assert api_resolution((1920, 1200)) == (1280, 800)
    assert api_resolution((1920, 1080)) == (1366, 768)
    assert api_resolution((1600, 1200)) == (1024, 768)
    assert api_resolution((1280, 800)) == (1280, 800)
    assert api_resolution((1000, 1000)) == (1000, 1000)


def test_same_aspect() -> None:
    assert same_aspect((1280, 800), (640, 400))
    assert not same_aspect((1280, 800), (1024, 768))


def test_points_scale_and_stay_inside() -> None:
    assert scale_point((640, 400), (1280, 800), (2560, 1600)) == (1280, 800)
    assert scale_point((1279, 799), (1280, 800), (640, 400)) == (639, 399)


def test_step_inputs_scale_every_point() -> None:
    scaled = scale_step_input(
        {
            "action": "left_click_drag",
            "start_coordinate": [10, 20],
            "coordinate": [100, 200],
            "text": "ctrl",
        },
        (640, 400),
        (1280, 800),
    )
    assert scaled == {
        "action": "left_click_drag",
        "start_coordinate": [20, 40],
        "coordinate": [200, 400],
        "text": "ctrl",
    }
    assert scale_step_input({"region": [0, 0, 320, 200]}, (640, 400), (1280, 800)) == {
        "region": [0, 0, 640, 400]
    }
