"""``--explain`` for a pod with claims: the devices table under the filter and score
tables (services/cli/explain_table.py)."""

from __future__ import annotations

import io

from services.cli.explain_table import device_rows, render

DETAILS = {
    "claims": {
        "gpu": {
            "claim": "train-gpu",
            "allocated": True,
            "devices": [
                {"request": "req-1", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"},
                {"request": "req-1", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-1"},
            ],
        },
        "nic": {
            "claim": "shared-nic",
            "allocated": False,
            "devices": [
                {"request": "port", "driver": "nic.example.com", "pool": "rack/a", "device": "p0"}
            ],
        },
    }
}


def test_device_rows_name_the_device_of_each_request():
    assert device_rows(DETAILS) == [
        ["CLAIM", "REQUEST", "DEVICE", "ALLOCATED"],
        ["gpu (train-gpu)", "req-1", "gpu.example.com/n1/gpu-0", "now"],
        ["gpu (train-gpu)", "req-1", "gpu.example.com/n1/gpu-1", "now"],
        ["nic (shared-nic)", "port", "nic.example.com/rack/a/p0", "before"],
    ]


def test_render_adds_the_devices_table():
    out = io.StringIO()
    explanation = {
        "evaluatedNodes": 1,
        "feasibleNodes": 1,
        "filterPlugins": ["DynamicResources"],
        "filter": {"n1": "passed"},
        "score": {},
        "nodeDetails": {"DynamicResources": DETAILS},
    }
    render(explanation, out, "n1")
    text = out.getvalue()
    assert "Devices (DynamicResources):\n" in text
    assert "nic (shared-nic)  port     nic.example.com/rack/a/p0  before\n" in text
