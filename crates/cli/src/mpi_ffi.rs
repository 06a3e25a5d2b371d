//! A thin FFI over Open MPI's libmpi, loaded at run time with dlopen, so interlab builds,
//! tests and runs without MPI installed; only `interlab mpi ...` needs the library.
//!
//! The library is `libmpi.so.40` (Open MPI 3.x to 5.x; Debian's libopenmpi3), or the file
//! named by `INTERLAB_LIBMPI`. Handles follow Open MPI's ABI (mpi.h): `MPI_Comm`,
//! `MPI_Datatype` and `MPI_Request` are pointers; `MPI_COMM_WORLD` and `MPI_BYTE` are the
//! addresses of the exported globals `ompi_mpi_comm_world` and `ompi_mpi_byte`;
//! `MPI_STATUS(ES)_IGNORE` is a null pointer. MPICH's ABI differs (integer handles) and
//! is not supported.

use std::ffi::{c_char, c_int, c_void, CStr, CString};

type Handle = *mut c_void;
type InitFn = unsafe extern "C" fn(*mut c_int, *mut *mut *mut c_char) -> c_int;
type FinalizeFn = unsafe extern "C" fn() -> c_int;
type CommRankFn = unsafe extern "C" fn(Handle, *mut c_int) -> c_int;
type CommSizeFn = unsafe extern "C" fn(Handle, *mut c_int) -> c_int;
type SendFn = unsafe extern "C" fn(*const c_void, c_int, Handle, c_int, c_int, Handle) -> c_int;
type RecvFn = unsafe extern "C" fn(*mut c_void, c_int, Handle, c_int, c_int, Handle, *mut c_void) -> c_int;
type IsendFn = unsafe extern "C" fn(*const c_void, c_int, Handle, c_int, c_int, Handle, *mut Handle) -> c_int;
type IrecvFn = unsafe extern "C" fn(*mut c_void, c_int, Handle, c_int, c_int, Handle, *mut Handle) -> c_int;
type WaitallFn = unsafe extern "C" fn(c_int, *mut Handle, *mut c_void) -> c_int;
type BarrierFn = unsafe extern "C" fn(Handle) -> c_int;
type AbortFn = unsafe extern "C" fn(Handle, c_int) -> c_int;
type LibraryVersionFn = unsafe extern "C" fn(*mut c_char, *mut c_int) -> c_int;
type ProcessorNameFn = unsafe extern "C" fn(*mut c_char, *mut c_int) -> c_int;

/// Environment variable naming the MPI library to load instead of `libmpi.so.40`.
pub const LIB_ENV: &str = "INTERLAB_LIBMPI";
/// Library loaded by default.
pub const DEFAULT_LIB: &str = "libmpi.so.40";

/// The MPI functions interlab calls, bound to one loaded library.
pub struct Mpi {
    comm: Handle,
    byte: Handle,
    init: InitFn,
    finalize: FinalizeFn,
    comm_rank: CommRankFn,
    comm_size: CommSizeFn,
    send: SendFn,
    recv: RecvFn,
    isend: IsendFn,
    irecv: IrecvFn,
    waitall: WaitallFn,
    barrier: BarrierFn,
    abort: AbortFn,
    library_version: LibraryVersionFn,
    processor_name: ProcessorNameFn,
}

fn dlerror() -> String {
    // SAFETY: dlerror returns null or a C string valid until the next dl call.
    unsafe {
        let e = libc::dlerror();
        if e.is_null() {
            "unknown error".into()
        } else {
            CStr::from_ptr(e).to_string_lossy().into_owned()
        }
    }
}

unsafe fn sym(lib: *mut c_void, name: &str) -> Result<*mut c_void, String> {
    let c = CString::new(name).expect("symbol names have no NUL");
    let p = libc::dlsym(lib, c.as_ptr());
    if p.is_null() {
        Err(format!("{name}: {} (is this Open MPI's libmpi?)", dlerror()))
    } else {
        Ok(p)
    }
}

/// The library name to load: `INTERLAB_LIBMPI` or [`DEFAULT_LIB`].
pub fn library_name() -> String {
    std::env::var(LIB_ENV).ok().filter(|s| !s.is_empty()).unwrap_or_else(|| DEFAULT_LIB.to_string())
}

/// Result of an MPI call: MPI_SUCCESS (0) or the error code.
fn ok(name: &str, rc: c_int) -> Result<(), String> {
    if rc == 0 {
        Ok(())
    } else {
        Err(format!("{name} failed (MPI error {rc})"))
    }
}

impl Mpi {
    /// Loads the library and binds the symbols (does not initialise MPI).
    pub fn load() -> Result<Mpi, String> {
        let name = library_name();
        let c = CString::new(name.clone()).map_err(|_| format!("{LIB_ENV}: contains a NUL byte"))?;
        // SAFETY: dlopen/dlsym with valid C strings; the library stays loaded for the life of
        // the process (never dlclosed), so the function pointers stay valid. RTLD_GLOBAL:
        // Open MPI's plugins resolve their symbols against libmpi.
        unsafe {
            let lib = libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL);
            if lib.is_null() {
                return Err(format!(
                    "cannot load the MPI library {name}: {} (install Open MPI, e.g. `apt-get install libopenmpi-dev openmpi-bin`, or name the library in {LIB_ENV})",
                    dlerror()
                ));
            }
            macro_rules! f {
                ($n:literal, $t:ty) => {
                    std::mem::transmute::<*mut c_void, $t>(sym(lib, $n)?)
                };
            }
            Ok(Mpi {
                comm: sym(lib, "ompi_mpi_comm_world")?,
                byte: sym(lib, "ompi_mpi_byte")?,
                init: f!("MPI_Init", InitFn),
                finalize: f!("MPI_Finalize", FinalizeFn),
                comm_rank: f!("MPI_Comm_rank", CommRankFn),
                comm_size: f!("MPI_Comm_size", CommSizeFn),
                send: f!("MPI_Send", SendFn),
                recv: f!("MPI_Recv", RecvFn),
                isend: f!("MPI_Isend", IsendFn),
                irecv: f!("MPI_Irecv", IrecvFn),
                waitall: f!("MPI_Waitall", WaitallFn),
                barrier: f!("MPI_Barrier", BarrierFn),
                abort: f!("MPI_Abort", AbortFn),
                library_version: f!("MPI_Get_library_version", LibraryVersionFn),
                processor_name: f!("MPI_Get_processor_name", ProcessorNameFn),
            })
        }
    }

    pub fn init(&self) -> Result<(), String> {
        // SAFETY: MPI_Init accepts null argc/argv.
        ok("MPI_Init", unsafe { (self.init)(std::ptr::null_mut(), std::ptr::null_mut()) })
    }

    pub fn finalize(&self) -> Result<(), String> {
        // SAFETY: called once, after init, with no request outstanding.
        ok("MPI_Finalize", unsafe { (self.finalize)() })
    }

    pub fn rank(&self) -> Result<i32, String> {
        let mut r = 0;
        // SAFETY: valid communicator and out pointer.
        ok("MPI_Comm_rank", unsafe { (self.comm_rank)(self.comm, &mut r) })?;
        Ok(r)
    }

    pub fn size(&self) -> Result<i32, String> {
        let mut r = 0;
        // SAFETY: valid communicator and out pointer.
        ok("MPI_Comm_size", unsafe { (self.comm_size)(self.comm, &mut r) })?;
        Ok(r)
    }

    fn count(len: usize) -> Result<c_int, String> {
        c_int::try_from(len).map_err(|_| format!("message of {len} B: larger than MPI's int count"))
    }

    /// Blocking send of `buf` to `dest`.
    pub fn send(&self, buf: &[u8], dest: i32, tag: i32) -> Result<(), String> {
        // SAFETY: buf is valid for its length for the duration of the blocking call.
        ok("MPI_Send", unsafe { (self.send)(buf.as_ptr().cast(), Self::count(buf.len())?, self.byte, dest, tag, self.comm) })
    }

    /// Blocking receive into `buf` from `src`.
    pub fn recv(&self, buf: &mut [u8], src: i32, tag: i32) -> Result<(), String> {
        // SAFETY: buf is valid and writable for its length; status ignored (null).
        ok("MPI_Recv", unsafe { (self.recv)(buf.as_mut_ptr().cast(), Self::count(buf.len())?, self.byte, src, tag, self.comm, std::ptr::null_mut()) })
    }

    /// Starts a send; the caller keeps `buf` alive and unmodified until [`Mpi::waitall`].
    ///
    /// # Safety
    /// `buf` must outlive the request.
    pub unsafe fn isend(&self, buf: &[u8], dest: i32, tag: i32, req: &mut Handle) -> Result<(), String> {
        ok("MPI_Isend", (self.isend)(buf.as_ptr().cast(), Self::count(buf.len())?, self.byte, dest, tag, self.comm, req))
    }

    /// Starts a receive; the caller keeps `buf` alive until [`Mpi::waitall`].
    ///
    /// # Safety
    /// `buf` must outlive the request.
    pub unsafe fn irecv(&self, buf: &mut [u8], src: i32, tag: i32, req: &mut Handle) -> Result<(), String> {
        ok("MPI_Irecv", (self.irecv)(buf.as_mut_ptr().cast(), Self::count(buf.len())?, self.byte, src, tag, self.comm, req))
    }

    /// Waits for every request (statuses ignored).
    pub fn waitall(&self, reqs: &mut [Handle]) -> Result<(), String> {
        // SAFETY: the requests came from isend/irecv (or are MPI_REQUEST_NULL after completion).
        ok("MPI_Waitall", unsafe { (self.waitall)(Self::count(reqs.len())?, reqs.as_mut_ptr(), std::ptr::null_mut()) })
    }

    pub fn barrier(&self) -> Result<(), String> {
        // SAFETY: valid communicator.
        ok("MPI_Barrier", unsafe { (self.barrier)(self.comm) })
    }

    /// Ends every rank of the job.
    pub fn abort(&self, code: i32) -> ! {
        // SAFETY: valid communicator; MPI_Abort does not return in practice.
        unsafe {
            (self.abort)(self.comm, code);
        }
        std::process::exit(code)
    }

    fn string(f: unsafe extern "C" fn(*mut c_char, *mut c_int) -> c_int) -> String {
        // MPI_MAX_LIBRARY_VERSION_STRING is 256 in Open MPI, MPI_MAX_PROCESSOR_NAME 256.
        let mut buf = vec![0 as c_char; 1024];
        let mut len: c_int = 0;
        // SAFETY: the buffer is larger than either maximum.
        let rc = unsafe { f(buf.as_mut_ptr(), &mut len) };
        if rc != 0 {
            return String::new();
        }
        let bytes: Vec<u8> = buf[..(len.max(0) as usize).min(buf.len())].iter().map(|&c| c as u8).collect();
        String::from_utf8_lossy(&bytes).trim_end_matches('\0').trim().to_string()
    }

    /// First line of MPI_Get_library_version, e.g. "Open MPI v4.1.4, ...".
    pub fn library_version(&self) -> String {
        let s = Self::string(self.library_version);
        s.lines().next().unwrap_or("").split(", package").next().unwrap_or("").to_string()
    }

    pub fn processor_name(&self) -> String {
        Self::string(self.processor_name)
    }
}

/// A null request handle, for request arrays.
pub fn null_request() -> Handle {
    std::ptr::null_mut()
}
