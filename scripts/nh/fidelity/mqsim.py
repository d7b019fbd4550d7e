"""scripts/bench-fidelity-sim's MQSim side: the SSD configuration and workload XML for the same
device, MQSim run on them, and its result file read back."""
import os
import subprocess
import time
import xml.etree.ElementTree as ET

from nh.fidelity.device import SECTOR, SEED, WS_PCT, bound


def xml_elem(parent, tag, text=None):
    e = ET.SubElement(parent, tag)
    if text is not None:
        e.text = str(text)
    return e


def mqsim_ssdconfig(dev, gc_blocks, suspend):
    root = ET.Element("Execution_Parameter_Set")
    h = xml_elem(root, "Host_Parameter_Set")
    for k, v in [("PCIe_Lane_Bandwidth", "8.0"), ("PCIe_Lane_Count", 16),
                 ("SATA_Processing_Delay", 0), ("Enable_ResponseTime_Logging", "false"),
                 ("ResponseTime_Logging_Period_Length", 1000000)]:
        xml_elem(h, k, v)
    d = xml_elem(root, "Device_Parameter_Set")
    # GC_Exec_Threshold is a fraction of the blocks of a plane: GC runs while a plane has fewer
    # free blocks than int(fraction * blocks); we ask for our gc-high watermark in blocks
    gc_frac = (gc_blocks + 0.5) / dev.blocks
    for k, v in [("Seed", 321), ("Enabled_Preconditioning", "true"), ("Memory_Type", "FLASH"),
                 ("HostInterface_Type", "NVME"), ("IO_Queue_Depth", 1024),
                 ("Queue_Fetch_Size", 1024), ("Caching_Mechanism", "SIMPLE"),
                 ("Data_Cache_Sharing_Mode", "SHARED"), ("Data_Cache_Capacity", 1 << 20),
                 ("Data_Cache_DRAM_Row_Size", 8192), ("Data_Cache_DRAM_Data_Rate", 800),
                 ("Data_Cache_DRAM_Data_Busrt_Size", 8), ("Data_Cache_DRAM_tRCD", 13),
                 ("Data_Cache_DRAM_tCL", 13), ("Data_Cache_DRAM_tRP", 13),
                 ("Address_Mapping", "PAGE_LEVEL"), ("Ideal_Mapping_Table", "true"),
                 ("CMT_Capacity", dev.logical_pages * 8), ("CMT_Sharing_Mode", "SHARED"),
                 ("Plane_Allocation_Scheme", "CWDP"),
                 ("Transaction_Scheduling_Policy", "OUT_OF_ORDER"),
                 ("Overprovisioning_Ratio", f"{dev.op_ratio:.6f}"),
                 ("GC_Exec_Threshold", f"{gc_frac:.6f}"), ("GC_Block_Selection_Policy", "GREEDY"),
                 ("Use_Copyback_for_GC", "false"), ("Preemptible_GC_Enabled", "false"),
                 ("GC_Hard_Threshold", f"{gc_frac / 2:.6f}"),
                 ("Dynamic_Wearleveling_Enabled", "true"),
                 ("Static_Wearleveling_Enabled", "false"), ("Static_Wearleveling_Threshold", 100),
                 ("Preferred_suspend_erase_time_for_read", 700000),
                 ("Preferred_suspend_erase_time_for_write", 700000),
                 ("Preferred_suspend_write_time_for_read", 100000),
                 ("Flash_Channel_Count", dev.channels), ("Flash_Channel_Width", 1),
                 ("Channel_Transfer_Rate", dev.mbps), ("Chip_No_Per_Channel", dev.ways),
                 ("Flash_Comm_Protocol", "NVDDR2")]:
        xml_elem(d, k, v)
    f = xml_elem(d, "Flash_Parameter_Set")
    for k, v in [("Flash_Technology", "SLC"), ("CMD_Suspension_Support", suspend),
                 ("Page_Read_Latency_LSB", dev.t_read), ("Page_Read_Latency_CSB", dev.t_read),
                 ("Page_Read_Latency_MSB", dev.t_read),
                 ("Page_Program_Latency_LSB", dev.t_prog), ("Page_Program_Latency_CSB", dev.t_prog),
                 ("Page_Program_Latency_MSB", dev.t_prog), ("Block_Erase_Latency", dev.t_erase),
                 ("Block_PE_Cycles_Limit", 100000), ("Suspend_Erase_Time", 700000),
                 ("Suspend_Program_Time", 100000), ("Die_No_Per_Chip", dev.dies),
                 ("Plane_No_Per_Die", dev.planes), ("Block_No_Per_Plane", dev.blocks),
                 ("Page_No_Per_Block", dev.pages), ("Page_Capacity", dev.page_size),
                 ("Page_Metadat_Capacity", 224)]:
        xml_elem(f, k, v)
    return root


def mqsim_workload(dev, read_pct, n, qd, fill):
    root = ET.Element("MQSim_IO_Scenarios")
    s = xml_elem(root, "IO_Scenario")
    f = xml_elem(s, "IO_Flow_Parameter_Set_Synthetic")
    spp = dev.page_size // SECTOR
    for k, v in [("Priority_Class", "HIGH"), ("Device_Level_Data_Caching_Mode", "TURNED_OFF"),
                 ("Channel_IDs", ",".join(map(str, range(dev.channels)))),
                 ("Chip_IDs", ",".join(map(str, range(dev.ways)))),
                 ("Die_IDs", ",".join(map(str, range(dev.dies)))),
                 ("Plane_IDs", ",".join(map(str, range(dev.planes)))),
                 ("Initial_Occupancy_Percentage", int(round(fill * 100))),
                 # 99%: at 100 MQSim stops with "Inconsistency found when moving a page for
                 # GC/WL" in its first GC. With an occupancy above 1/1.1 of the working set
                 # MQSim spreads the preconditioned pages over the whole space (and says it
                 # "made some adjustments"); ours fills the first --fill
                 ("Working_Set_Percentage", WS_PCT),
                 ("Synthetic_Generator_Type", "QUEUE_DEPTH"), ("Read_Percentage", read_pct),
                 ("Address_Distribution", "RANDOM_UNIFORM"), ("Percentage_of_Hot_Region", 0),
                 ("Generated_Aligned_Addresses", "true"), ("Address_Alignment_Unit", spp),
                 ("Request_Size_Distribution", "FIXED"), ("Average_Request_Size", 4096 // SECTOR),
                 ("Variance_Request_Size", 0), ("Seed", SEED % 100000),
                 ("Average_No_of_Reqs_in_Queue", qd), ("Intensity", 0), ("Stop_Time", 0),
                 ("Total_Requests_To_Generate", n)]:
        xml_elem(f, k, v)
    return root


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def parse_mqsim(path):
    """The flow's and the FTL's figures from MQSim's result XML (attributes of elements whose
    tag ends with IO_Flow and FTL). Response times there are whole microseconds."""
    root = ET.parse(path).getroot()
    flow = ftl = None
    for e in root.iter():
        if e.tag.endswith("IO_Flow") and flow is None:
            # the flow's figures are child elements, the FTL's attributes
            flow = {c.tag: (c.text or "").strip() for c in e}
        elif e.tag.endswith(".FTL") or e.tag == "FTL":
            ftl = e.attrib
    if flow is None or ftl is None:
        raise ValueError(f"{path}: no IO_Flow or FTL element")
    programs = num(ftl.get("Issued_Flash_Program_CMD")) or 0
    writes = num(flow.get("Write_Request_Count")) or 0
    gc_runs = num(ftl.get("Total_GC_Executions")) or 0
    moved = num(ftl.get("Average_Page_Movement_For_GC")) or 0
    res = {"iops": num(flow.get("IOPS")), "requests": num(flow.get("Request_Count")),
           "reads": num(flow.get("Read_Request_Count")), "writes": writes,
           "mean_us": num(flow.get("Device_Response_Time")),
           "max_us": num(flow.get("Max_Device_Response_Time")),
           "e2e_mean_us": num(flow.get("End_to_End_Request_Delay")),
           "e2e_max_us": num(flow.get("Max_End_to_End_Request_Delay")),
           "flash_reads": num(ftl.get("Issued_Flash_Read_CMD")), "flash_programs": programs,
           "erases": num(ftl.get("Issued_Flash_Erase_CMD")), "gc_executions": gc_runs,
           "gc_page_moves": gc_runs * moved,
           "suspend_program": num(ftl.get("Issued_Flash_Suspend_Program_CMD")),
           "suspend_erase": num(ftl.get("Issued_Flash_Suspend_Erase_CMD"))}
    # one 4 KiB request is one page: programs over written pages
    res["waf"] = programs / writes if writes else None
    return res


def run_mqsim(a, dev, name, read_pct, gc_blocks):
    wd = os.path.join(a.out, "mqsim", name)
    os.makedirs(wd, exist_ok=True)
    ssd = os.path.join(wd, "ssdconfig.xml")
    wl = os.path.join(wd, "workload.xml")
    ET.ElementTree(mqsim_ssdconfig(dev, gc_blocks, a.mqsim_suspend)).write(ssd)
    ET.ElementTree(mqsim_workload(dev, read_pct, a.requests, a.qd, a.fill)).write(wl)
    result = os.path.join(wd, "workload_scenario_1.xml")
    if os.path.exists(result):
        os.unlink(result)
    cmd = ["nice", a.mqsim, "-i", "ssdconfig.xml", "-w", "workload.xml"]
    t0 = time.time()
    with open(os.path.join(wd, "mqsim.log"), "w") as log:
        r = subprocess.run(cmd, cwd=wd, stdout=log, stderr=subprocess.STDOUT,
                           timeout=a.mqsim_timeout)
    if r.returncode != 0 or not os.path.exists(result):
        return {"error": f"MQSim exit {r.returncode}; see {wd}/mqsim.log"}
    res = parse_mqsim(result)
    # MQSim's IOPS divides by whole simulated seconds (an integer division of its ns clock):
    # 400,000 requests in 36.9 s give 11,111. In a closed loop at a queue depth of qd,
    # Little's law gives the rate from the mean response time instead
    res["iops_reported"] = res["iops"]
    res["iops"] = a.qd * 1e6 / res["mean_us"] if res["mean_us"] else None
    res["valid_per_victim"] = (res["gc_page_moves"] / res["gc_executions"]
                               if res["gc_executions"] else None)
    # the same bound from MQSim's own flash counters (one page per operation: planes=1 and no
    # multi-plane merging counted; its NV-DDR2 command cycles are left out, as in ours)
    res["counts"] = {"requests": res["requests"] or 0, "write_pages": res["writes"] or 0,
                     "page_reads": res["flash_reads"] or 0, "read_ops": res["flash_reads"] or 0,
                     "page_programs": res["flash_programs"] or 0,
                     "program_ops": res["flash_programs"] or 0, "erases": res["erases"] or 0}
    res["bound"] = bound(res["counts"], dev.t_read, dev.t_prog, dev.t_erase, dev.t_xfer,
                         dev.ndies, dev.channels)
    res["ratio"] = (res["iops"] / res["bound"]["bound_iops"]
                    if res["iops"] and res["bound"]["bound_iops"] else None)
    res["wall_s"] = round(time.time() - t0, 1)
    res["dir"] = wd
    return res
