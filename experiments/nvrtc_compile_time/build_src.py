import re,os
R='/work/main/kernels-gen/src/'
T=R+'templates/'
def rd(p): return open(p).read()
block_level="#ifndef GPU_SCAN_BLOCK_LEVEL\n#define GPU_SCAN_BLOCK_LEVEL\n"+rd(T+'warp.cuh')+rd(T+'block.cuh')+"#endif  // GPU_SCAN_BLOCK_LEVEL\n"
lib=rd(T+'launch.cuh')+"\n#ifndef GPU_SCAN_LIBRARY\n#define GPU_SCAN_LIBRARY\n"
lib+=rd(T+'direction.cuh')+rd(T+'shape.cuh')+block_level
for f in "segments segment_offsets segment_keys segment_pairs tile reduce_then_scan single_pass pipelined_stages pipelined_roles pipelined columns elementwise segment_totals summed_area".split():
    lib+=rd(T+f+'.cuh')
lib+="#endif  // GPU_SCAN_LIBRARY\n"
def snap(name):
    s=rd('/work/main/tests/snapshots/snapshots_cuda__%s.snap'%name)
    # strip insta header
    parts=s.split('---\n',2)
    return parts[2]
open('library.cuh','w').write(lib)
open('prelude.cuh','w').write(rd(R+'prelude.cuh'))
for n in ['library','prelude','launch_state','layout_sum_u32','sum_u32','kernel_wrappers','stats','mat2']:
    open('snap_'+n+'.txt','w').write(snap(n))
