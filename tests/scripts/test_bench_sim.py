"""scripts/bench-sim --mqsim against a stand-in for MQSim (a Makefile that makes a script which
reads the workload XML we wrote and answers with a result XML of MQSim's shape): the build step,
the XML we give MQSim, the table and the JSON."""
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

from helpers import REPO

SCRIPT = os.path.join(REPO, "scripts", "bench-sim")

FAKE = r'''#!PYTHON
"""Stand-in for MQSim: one request per trace line, one page program per write line."""
import sys
import xml.etree.ElementTree as ET
wl = ET.parse(sys.argv[sys.argv.index("-w") + 1]).getroot()
ssd = ET.parse(sys.argv[sys.argv.index("-i") + 1]).getroot()
assert ssd.find("Device_Parameter_Set/Enabled_Preconditioning").text == "false"
flow = wl.find("IO_Scenario/IO_Flow_Parameter_Set_Trace_Based")
lines = [l.split() for l in open(flow.find("File_Path").text)]
writes = sum(1 for l in lines if l[4] == "0")
root = ET.Element("MQSim_Results")
f = ET.SubElement(root, "Host.IO_Flow")
for k, v in [("Request_Count", len(lines)), ("Read_Request_Count", len(lines) - writes),
             ("Write_Request_Count", writes), ("IOPS", 1), ("Device_Response_Time", 1)]:
    ET.SubElement(f, k).text = str(v)
ET.SubElement(root, "SSDDevice.FTL", Issued_Flash_Program_CMD=str(writes),
              Issued_Flash_Erase_CMD="0")
ET.ElementTree(root).write("workload_scenario_1.xml")
'''


def test_mqsim_comparison(tmp_path):
    src = tmp_path / "mqsim"
    src.mkdir()
    (src / "fake.py").write_text(FAKE.replace("PYTHON", sys.executable))
    (src / "Makefile").write_text("MQSim: fake.py\n\tcp fake.py MQSim\n\tchmod +x MQSim\n")
    r = subprocess.run([SCRIPT, "--mqsim", str(src), "--random-requests", "3000"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (src / "MQSim").exists()
    for name in ("tpcc-small", "cloudPhysicsIO", "random-3000"):
        assert any(line.startswith(name) for line in r.stdout.splitlines()), r.stdout
    with open(os.path.join(REPO, "build", "bench", "bench-sim-mqsim.json")) as f:
        doc = json.load(f)
    rows = {row["trace"]: row for row in doc["results"]}
    assert rows["tpcc-small"]["ours"]["requests"] == rows["tpcc-small"]["mqsim"]["requests"] == 6999
    assert rows["random-3000"]["mqsim"]["requests"] == 3000
    for row in rows.values():
        assert row["ours"]["cpu_s"] > 0 and row["mqsim"]["cpu_s"] >= 0
        # the same device to both: our geometry is MQSim's
        ssd = ET.parse(os.path.join(row["mqsim"]["dir"], "ssdconfig.xml")).getroot()
        assert ssd.find("Device_Parameter_Set/Flash_Channel_Count").text == "8"
        assert ssd.find("Device_Parameter_Set/Flash_Parameter_Set/Page_No_Per_Block").text == "256"
        assert "channels=8" in row["ours"]["command"][-1]
