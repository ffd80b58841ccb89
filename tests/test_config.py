"""Config composition: the real conf/ tree, typed schemas, errors that name the file and key."""

import shutil
from pathlib import Path

import pytest

from gate.cli import compose
from gate.config import SegPhantomConfig, conf_dir
from gate.errors import ConfigError
from tests.conftest import medgate


def test_default_composition_is_typed():
    cfg = compose([])
    assert isinstance(cfg.task, SegPhantomConfig)
    assert cfg.task.name == "seg_phantom"
    assert cfg.agent.name == "monai_unet"
    assert cfg.tier.name == "lite" and cfg.budget.name == "cpu"
    assert cfg.task.stage_weights == {"plan": 25, "setup": 15, "validate": 35, "inference": 15,
                                      "submit": 10}


def test_groups_compose_from_overrides():
    cfg = compose(["task=seg_phantom_tiny", "agent=crasher", "tier=standard", "budget=ci",
                   "seed=3"])
    assert (cfg.task.name, cfg.agent.name, cfg.tier.brief, cfg.budget.wall_clock_s, cfg.seed) == \
        ("seg_phantom_tiny", "crasher", "standard", 240, 3)


@pytest.mark.parametrize("override, key", [
    ("task.not_a_key=1", "not_a_key"),
    ("budget.wall_clock_s=soon", "wall_clock_s"),
    ("agent=does_not_exist", "agent"),
])
def test_bad_override_names_the_key(override, key):
    with pytest.raises(ConfigError) as err:
        compose([override])
    assert key in str(err.value)


@pytest.fixture
def bad_conf(tmp_path: Path) -> Path:
    conf = tmp_path / "conf"
    shutil.copytree(conf_dir(), conf)
    (conf / "task" / "broken.yaml").write_text(
        "defaults:\n  - seg_phantom_schema\n  - _self_\nname: broken\nlesion_radius: [1, 2]\n")
    (conf / "agent" / "broken.yaml").write_text(
        "defaults:\n  - agent_schema\n  - _self_\nname: broken\ncommand: not-a-list\n")
    return conf


@pytest.mark.parametrize("override, names", [
    ("task=broken", ["task/broken", "lesion_radius"]),
    ("agent=broken", ["agent/broken", "command"]),
])
def test_malformed_config_file_exits_2_naming_file_and_key(tmp_path, bad_conf, override, names):
    proc = medgate(tmp_path, "run", override, env={"MEDGATE_CONF_DIR": str(bad_conf)})
    assert proc.returncode == 2, proc.stderr
    for name in names:
        assert name in proc.stderr
    assert not (tmp_path / "mlflow.db").exists()


def test_gate_with_bad_policy_override_exits_2(tmp_path):
    proc = medgate(tmp_path, "gate", "policy.min_overall=high")
    assert proc.returncode == 2
    assert "min_overall" in proc.stderr
