#include "trace/trace-hw_nvme_hybrid.h"
