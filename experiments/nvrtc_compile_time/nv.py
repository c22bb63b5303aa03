import ctypes, time, os, sys
LIB=os.environ.get('NVRTC_LIB', os.path.join(os.path.dirname(__file__), '../../.cuda-tools')) + '/nvidia/cu13/lib/libnvrtc.so.13'
L=ctypes.CDLL(LIB)
P=ctypes.c_void_p
L.nvrtcGetErrorString.restype=ctypes.c_char_p
def chk(r, what, prog=None):
    if r!=0:
        log=get_log(prog) if prog else ''
        raise RuntimeError(f"{what}: {r} {L.nvrtcGetErrorString(r).decode()}\n{log[:4000]}")
def get_log(prog):
    n=ctypes.c_size_t(); L.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    b=ctypes.create_string_buffer(n.value); L.nvrtcGetProgramLog(prog,b); return b.value.decode(errors='replace')
def version():
    a=ctypes.c_int(); b=ctypes.c_int(); L.nvrtcVersion(ctypes.byref(a),ctypes.byref(b)); return a.value,b.value
def heap_size():
    n=ctypes.c_size_t(); chk(L.nvrtcGetPCHHeapSize(ctypes.byref(n)),'heap'); return n.value
def set_heap_size(n): chk(L.nvrtcSetPCHHeapSize(ctypes.c_size_t(n)),'setheap')
def compile(src, opts, name='prog.cu', headers=(), want='cubin', keep=False):
    """returns dict with time_ms, size, log, pch_status"""
    prog=P()
    nh=len(headers)
    H=(ctypes.c_char_p*max(nh,1))(*[h[1].encode() for h in headers]) if nh else None
    N=(ctypes.c_char_p*max(nh,1))(*[h[0].encode() for h in headers]) if nh else None
    chk(L.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), name.encode(), nh, H, N),'create')
    O=(ctypes.c_char_p*len(opts))(*[o.encode() for o in opts])
    t=time.perf_counter(); c=time.process_time()
    r=L.nvrtcCompileProgram(prog, len(opts), O)
    dt=(time.perf_counter()-t)*1000; dc=(time.process_time()-c)*1000
    out={'ms':dt,'cpu':dc,'rc':r,'log':get_log(prog)}
    out['pch_status']=L.nvrtcGetPCHCreateStatus(prog)
    req=ctypes.c_size_t(); L.nvrtcGetPCHHeapSizeRequired(prog, ctypes.byref(req)); out['pch_heap_required']=req.value
    if r==0:
        n=ctypes.c_size_t()
        if want=='cubin':
            chk(L.nvrtcGetCUBINSize(prog, ctypes.byref(n)),'cubinsize',prog)
            b=ctypes.create_string_buffer(n.value); L.nvrtcGetCUBIN(prog,b); out['image']=b.raw
        elif want=='ptx':
            chk(L.nvrtcGetPTXSize(prog, ctypes.byref(n)),'ptxsize',prog)
            b=ctypes.create_string_buffer(n.value); L.nvrtcGetPTX(prog,b); out['image']=b.raw[:-1]
    L.nvrtcDestroyProgram(ctypes.byref(prog))
    return out
def opts(arch='sm_90', cubin=True):
    a=arch if cubin else arch.replace('sm_','compute_')
    return [f'--gpu-architecture={a}','--std=c++17','--ftz=false','--prec-div=true','--prec-sqrt=true','--device-as-default-execution-space','--minimal']
