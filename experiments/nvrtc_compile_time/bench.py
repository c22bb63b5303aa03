import sys,os,statistics as st; sys.path.insert(0,'/tmp/pchwork'); import nv, prog
o=nv.opts()
HDR=prog.LAUNCH+prog.PRELUDE+prog.LIBRARY
HDRS=prog.LAUNCH+prog.SEG_DEFINE+prog.PRELUDE+prog.LIBRARY
def tail(kernels): return prog.LAYOUT+prog.OP+"\n// Kernels (kernels_gen::abi).\n"+''.join(prog.WRAPPERS[k] for k in kernels)
def src(kernels, seg=False): return ('#include "gpu_scan_segmented.cuh"\n' if seg else '#include "gpu_scan_plain.cuh"\n')+tail(kernels)
H=[('gpu_scan_plain.cuh',HDR),('gpu_scan_segmented.cuh',HDRS)]
def mk_pch(path, seg=False, extra=()):
    if os.path.exists(path): os.remove(path)
    r=nv.compile(src([],seg), o+[f'--create-pch={path}',*extra], headers=H)
    assert r['pch_status']==0, r
    return r
def stat(xs): return f"{min(xs):6.1f}/{st.median(xs):6.1f}"
