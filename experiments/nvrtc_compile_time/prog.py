import re, os
D=os.environ.get('WORK', '/tmp/nvrtc_compile_time/')
rd=lambda f: open(D+f).read()
LIBRARY=rd('library.cuh'); PRELUDE=rd('prelude.cuh')
LAUNCH=rd('snap_launch_state.txt'); LAYOUT=rd('snap_layout_sum_u32.txt'); OP=rd('snap_sum_u32.txt')
W=rd('snap_kernel_wrappers.txt')
WRAPPERS={}
order=[]
for m in re.finditer(r'^extern "C".*?^}\n', W, re.S|re.M):
    w=m.group(0)
    name=re.search(r'(gpu_scan_sum_u32_[a-z0-9_]+)\(', w).group(1)
    short=name[len('gpu_scan_sum_u32_'):]
    WRAPPERS[short]=w; order.append(short)
SEG_DEFINE="#ifndef GPU_SCAN_SEGMENTED\n#define GPU_SCAN_SEGMENTED 1\n#endif\n"
def is_seg(k): return k.startswith('segmented_') or k.startswith('reverse_segmented_')
def program(kernels, segmented=None):
    if segmented is None: segmented=any(is_seg(k) for k in kernels)
    out=LAUNCH
    if segmented: out+=SEG_DEFINE
    out+=PRELUDE+LIBRARY+LAYOUT+OP+"\n// Kernels (kernels_gen::abi).\n"
    for k in kernels: out+=WRAPPERS[k]
    return out
