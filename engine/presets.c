/*
 * presets.c - the presets of real drives (contract in config.h): each value with where it comes
 * from, printed by nvme-hybrid-sim --list-presets and laid out in docs/presets.md.
 *
 * A preset's values are soft (nh_config_settle): one the rest of the configuration refuses
 * (stripe-merge=on with ftl=bast) goes back to its key's default and /config/preset-dropped
 * says so, so a preset may carry what not every FTL takes, as the capacitor-backed write cache
 * of the datacenter drives.  Capacity is not a key: the device
 * takes it from its backend, the simulator from --capacity or the trace, and blocks=auto scales
 * the blocks per plane to it.
 */
#include "config.h"

#include <string.h>

#define V6 "Samsung, 6th-generation V-NAND mass production (newsroom, 2019-08-06): " \
           "write under 450 us, read under 45 us"
#define ASSUMED_PAGE "assumed: the 16 KiB page of 3D TLC of the generation; " \
                     "Samsung publishes none"
#define ASSUMED_BLOCK "assumed: Samsung publishes no block size; 768 pages = 12 MiB " \
                      "blocks, the order of 3D TLC's"
#define ASSUMED_PLANES "assumed: Samsung publishes no plane count; 2, as FEMU's and MQSim's " \
                       "TLC configurations"
#define ASSUMED_ERASE "assumed: no tBERS is published; the tlc cell preset's 3 ms " \
                      "(SimpleSSD, docs/engine.md)"
#define PCIE4 "PCIe 4.0 x4 (published): 4 lanes x 16 GT/s x 128/130, before packet overhead"
#define NVMEVIRT "NVMeVirt (Kim et al., FAST'23) ssd_config.h, BASE_SSD=SAMSUNG_970PRO"
#define PLP_CACHE "the drive's DRAM write cache, protected by its capacitors (power-loss " \
                  "protection): stripe-merge's staging buffer is power-protected device DRAM " \
                  "that acknowledges a write when staged (docs/engine.md); it needs ftl=page " \
                  "or dftl, and is dropped for the others"
#define MAP4K "assumed: the 4 KiB mapping unit of current NVMe drives' FTLs (a map entry of 4 " \
              "bytes a 4 KiB unit is the 1 GB of DRAM a TB datacenter drives carry); units are " \
              "packed four to a 16 KiB page in the write cache (needs stripe-merge; dropped " \
              "with zones or ftl=bast|fast|sast, docs/mapping-units.md)"
#define FW_NONE "none is published, so fw-read and fw-write stay 0"
#define MPS256 "assumed: the 256-byte max payload size most server root ports grant " \
               "(the drive supports larger; the link's is the smaller of the two)"

static const NhPresetValue pm9a3_values[] = {
    { "cell", "tlc", "Samsung PM9A3 announcement (heise, 2020-05): 128-layer V-NAND V6, TLC" },
    { "channels", "8", "assumed: Samsung publishes no channel count; 8, as its PCIe 4.0 "
      "controllers of the time (980 PRO)" },
    { "ways", "8", "derived: 7.68 TB needs 112 dies of 512 Gb (V6), rounded up to 128 = 8 "
      "channels x 8 ways x 2 dies; the split is assumed" },
    { "dies", "2", "derived with ways (128 dies)" },
    { "planes", "2", ASSUMED_PLANES },
    { "page-size", "16K", ASSUMED_PAGE },
    { "pages", "768", ASSUMED_BLOCK },
    { "t-read", "45us", V6 },
    { "t-prog", "450us", V6 " (the program of a page, as the engine books it; one-shot "
      "is off so every FTL takes the preset)" },
    { "t-erase", "3ms", ASSUMED_ERASE },
    { "channel-mbps", "1400", "Samsung, 5th-generation V-NAND (newsroom, 2018-07-10): Toggle "
      "DDR 4.0 at 1.4 Gb/s per pin, 8 pins; V6 is at least as fast" },
    { "op", "12", "derived: 128 dies x 512 Gb = 8 TiB of flash for 7.68 TB" },
    { "host-mbps", "7877", PCIE4 },
    { "host-mps", "256", MPS256 },
    { "stripe-merge", "on", "assumed: power-loss protection, as Samsung's datacenter drives "
      "have (PM9D3a's sheet says so; no PM9A3 sheet was read); " PLP_CACHE },
    { "map-unit", "4K", MAP4K },
    { NULL, NULL, NULL }
};

static const NhPreset pm9a3 = {
    "pm9a3", "Samsung PM9A3 U.2 7.68 TB (MZQL27T6HBLA), PCIe 4.0 x4, V6 TLC, datacenter",
    "firmware time: " FW_NONE,
    pm9a3_values,
};

static const NhPresetValue pro970_values[] = {
    { "cell", "mlc", NVMEVIRT ": CELL_MODE_MLC (the 970 PRO's 64-layer V-NAND is 2 bits a "
      "cell)" },
    { "channels", "8", NVMEVIRT ": NAND_CHANNELS 8" },
    { "ways", "2", NVMEVIRT ": LUNS_PER_NAND_CH 2" },
    { "dies", "1", NVMEVIRT ": a LUN is a die" },
    { "planes", "1", NVMEVIRT ": PLNS_PER_LUN 1" },
    { "page-size", "32K", NVMEVIRT ": FLASH_PAGE_SIZE 32 KiB" },
    { "pages", "128", "derived: NVMeVirt fixes BLKS_PER_PLN 8192 and derives pages per block "
      "from the capacity; 128 is what 8192 blocks give 512 GB, and blocks=auto here scales "
      "the blocks instead" },
    { "t-read", "36us", NVMEVIRT ": NAND_READ_LATENCY 36,013 ns +- 6,000 for LSB/MSB (35,760 "
      "for 4 KiB)" },
    { "t-prog", "185us", NVMEVIRT ": NAND_PROG_LATENCY 185,000 ns" },
    { "t-erase", "1500us", "assumed: NVMeVirt books no erase time (NAND_ERASE_LATENCY 0); the "
      "mlc cell preset's 1.5 ms" },
    { "channel-mbps", "800", NVMEVIRT ": NAND_CHANNEL_BANDWIDTH 800 MB/s" },
    { "op", "7", NVMEVIRT ": OP_AREA_PERCENT 0.07" },
    { "host-mbps", "3360", NVMEVIRT ": PCIE_BANDWIDTH 3,360 MB/s" },
    { "host-mps", "0", "NVMeVirt's PCIE_BANDWIDTH is already an effective rate (PCIe 3.0 "
      "x4's line rate is 3,938 MB/s) and it books no packet overhead" },
    { "fw-read", "21500ns", NVMEVIRT ": FW_4KB_READ_LATENCY 21,500 ns, added to a read's "
      "start (conv_ftl.c)" },
    { "fw-read-large", "8990ns", NVMEVIRT ": FW_READ_LATENCY 30,490 ns for larger reads, "
      "less fw-read (NVMeVirt's code compares with 4 KiB times its 4 partitions, 16 KiB)" },
    { "fw-write", "4000ns", NVMEVIRT ": FW_WBUF_LATENCY0 4,000 ns a write" },
    { "fw-write-4k", "460ns", NVMEVIRT ": FW_WBUF_LATENCY1 460 ns for each 4 KiB" },
    { "map-unit", "4K", "NVMeVirt (Kim et al., FAST'23) ssd.h: its FTL's page is the 4 KiB "
      "mapping unit, packed into the 32 KiB flash pages (pgs_per_flashpg)" },
    { "stripe-merge", "on", NVMEVIRT ": WRITE_EARLY_COMPLETION 1 and GLOBAL_WB_SIZE = "
      "NAND_CHANNELS x LUNS_PER_NAND_CH x ONESHOT_PAGE_SIZE x 2 (1 MiB): writes complete from "
      "a buffer of two stripes of one page a die, which is what the stage is here (two halves "
      "of 16 dies x 32 KiB)" },
    { "stage-volatile", "on", "a client drive: no power-loss capacitors (AnandTech forums, "
      "Billy Tallis, 2020: only enterprise drives have them); its write buffer is the 512 MB "
      "LPDDR4 (ssdwiki.com, 970 PRO) and Flush/FUA make writes durable" },
    { NULL, NULL, NULL }
};

static const NhPreset pro970 = {
    "970pro", "Samsung 970 PRO (512 GB), PCIe 3.0 x4, 64-layer MLC V-NAND, as NVMeVirt "
    "calibrated it (NVMeVirt's values, not Samsung's)",
    "controller throughput (NVMeVirt's firmware time is a delay here, not a resource; "
    "docs/presets.md)",
    pro970_values,
};

static const NhPresetValue sz985_values[] = {
    { "cell", "znand", "Samsung SZ985 (seed 004, its Table: 800 GB of Z-NAND; Tom's "
      "Hardware, 2018-01): the znand cell preset, 3 us read and 100 us program (ISSCC'18)" },
    { "channels", "16", "assumed: Samsung publishes no channel count; 16, so that 3.2 GB/s "
      "(published) is within the buses at 800 MB/s each with room for GC" },
    { "ways", "8", "derived: 800 GB needs 100 dies of 64 Gb Z-NAND (48-layer SLC), rounded up "
      "to 128 = 16 channels x 8 ways; the split is assumed" },
    { "dies", "1", "derived with ways (128 dies)" },
    { "planes", "1", "assumed: Samsung publishes no plane count for Z-NAND" },
    { "page-size", "4K", "Z-NAND's page is 2 KiB (ISSCC'18); 4K is the least the engine maps" },
    { "pages", "256", "assumed: no block size is published" },
    { "channel-mbps", "800", "assumed: no Z-NAND interface speed is published; the engine's "
      "800 MB/s" },
    { "op", "27", "derived: 128 dies x 64 Gb = 1 TiB of flash for 800 GB (30 drive writes a "
      "day, published, need a large spare area)" },
    { "host-mbps", "3200", "seed 004's test bed: PCIe Gen.3 x4 (3.2 GB/s)" },
    { "host-mps", "0", "seed 004's 3.2 GB/s is an effective rate (PCIe 3.0 x4's line rate is "
      "3,938 MB/s): no packet overhead on top" },
    { "stripe-merge", "on", "Tom's Hardware (2018-01): 1.5 GB LPDDR4 cache with power-loss "
      "protection; " PLP_CACHE },
    { NULL, NULL, NULL }
};

static const NhPreset sz985 = {
    "sz985", "Samsung SZ985 Z-SSD 800 GB, PCIe 3.0 x4, Z-NAND (SLC), the base of seed 004's "
    "2B-SSD",
    "firmware time: " FW_NONE " (its 12-20 us QD1 read is the figure it is validated against)",
    sz985_values,
};

static const NhPresetValue pm9d3a_values[] = {
    { "cell", "tlc", "Samsung PM9D3a 7.68 TB specification (MZWL67T6HBLC): V8 236-layer TLC, "
      "FDP" },
    { "channels", "8", "assumed: Samsung publishes no channel count" },
    { "ways", "8", "derived: 7.68 TB needs 56 dies of 1 Tb (V8), rounded up to 64 = 8 "
      "channels x 8 ways; the split is assumed" },
    { "dies", "1", "derived with ways (64 dies)" },
    { "planes", "2", ASSUMED_PLANES },
    { "page-size", "16K", ASSUMED_PAGE },
    { "pages", "768", ASSUMED_BLOCK },
    { "t-read", "45us", "assumed: V8's tR is not published; V6's (" V6 ")" },
    { "t-prog", "450us", "assumed: V8's tPROG is not published; V6's" },
    { "t-erase", "3ms", ASSUMED_ERASE },
    { "channel-mbps", "2400", "Samsung, 8th-generation V-NAND mass production (newsroom, "
      "2022-11): 2.4 Gb/s per pin, 8 pins" },
    { "op", "12", "derived: 64 dies x 1 Tb = 8 TiB of flash for 7.68 TB" },
    { "host-mbps", "15754", "PCIe 5.0 x4 (published): 4 lanes x 32 GT/s x 128/130, before "
      "packet overhead" },
    { "host-mps", "256", MPS256 },
    { "stripe-merge", "on", "Samsung PM9D3a specification: power-loss protection; " PLP_CACHE },
    { "map-unit", "4K", MAP4K },
    { NULL, NULL, NULL }
};

static const NhPreset pm9d3a = {
    "pm9d3a", "Samsung PM9D3a U.2 7.68 TB, PCIe 5.0 x4, V8 TLC, Flexible Data Placement "
    "(fdp=on is the device's own property)",
    "firmware time: " FW_NONE,
    pm9d3a_values,
};

const NhPreset *const nh_presets[] = { &pm9a3, &pro970, &sz985, &pm9d3a, NULL };
const char *const nh_preset_names[] = { "pm9a3", "970pro", "sz985", "pm9d3a", "none", NULL };

const NhPreset *nh_preset_find(const char *name)
{
    for (size_t i = 0; nh_presets[i]; i++) {
        if (!strcmp(nh_presets[i]->name, name)) {
            return nh_presets[i];
        }
    }
    return NULL;
}
