import pytest

from gate.registry import Registry, UnknownNameError


def test_lazy_entry_is_imported_on_first_use():
    reg: Registry[object] = Registry("thing")
    reg.register("path_join", "os.path:join")
    import os.path

    assert reg.get("path_join") is os.path.join


def test_unknown_name_suggests_close_matches():
    reg: Registry[int] = Registry("metric")
    reg.register("dice", 1)
    reg.register("hausdorff", 2)
    with pytest.raises(UnknownNameError) as err:
        reg.get("dise")
    assert "Did you mean 'dice'?" in str(err.value)
    assert "hausdorff" in str(err.value)


def test_registering_two_objects_under_one_name_fails():
    reg: Registry[int] = Registry("metric")
    reg.register("dice", 1)
    with pytest.raises(ValueError, match="registered twice"):
        reg.register("dice", 2)


def test_decorator_registration():
    reg: Registry[object] = Registry("rubric")

    @reg.register("plan")
    def plan() -> str:
        return "p"

    assert reg.get("plan")() == "p"
    assert reg.names() == ["plan"]
