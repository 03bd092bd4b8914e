//! The curated Rust API (`tegragpu::{Device, DeviceBuffer, Queue, Launch, ...}`) on the device
//! under test (`TEGRAGPU_TEST_DEVICE`, default the emulated Orin): results of typed launches,
//! argument checks against the kernels' parameter info, buffer ranges, host views against GPU
//! work, command buffers, and error messages that name the Rust call.

mod common;

use bytemuck::{Pod, Zeroable};
use std::time::Duration;
use tegragpu::{Device, DeviceBuffer, Kernel, Module, Queue, Status};

fn dev() -> Device {
    let spec = std::env::var("TEGRAGPU_TEST_DEVICE").unwrap_or_else(|_| "emu".to_string());
    Device::open(&spec).unwrap_or_else(|e| panic!("opening device \"{spec}\": {e:?}"))
}

fn fixtures(dev: &Device) -> Module {
    let p = common::fixture_path(dev.core());
    let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()));
    dev.load_module(&bytes).expect("loading the fixture cubin")
}

fn kernel(dev: &Device, name: &str) -> Kernel {
    fixtures(dev).kernel(name).unwrap()
}

/// vector_add(a, b, c, n) over `n` elements; returns c.
fn vector_add(dev: &Device, q: &mut Queue, n: usize) -> DeviceBuffer<f32> {
    let k = kernel(dev, "vector_add");
    let a = dev
        .alloc_from(&(0..n).map(|i| i as f32).collect::<Vec<_>>())
        .unwrap();
    let b = dev
        .alloc_from(&(0..n).map(|i| (2 * i) as f32).collect::<Vec<_>>())
        .unwrap();
    let mut c = dev.alloc::<f32>(n).unwrap();
    // SAFETY: vector_add reads a[0..n], b[0..n] and writes c[0..n].
    unsafe {
        q.launch(&k)
            .grid((n as u32).div_ceil(128))
            .block(128)
            .arg(&a)
            .arg(&b)
            .arg_mut(&mut c)
            .arg(&(n as u32))
            .record()
            .unwrap();
    }
    c
}

#[test]
fn vector_add_with_typed_arguments() {
    let dev = dev();
    let mut q = dev.queue().unwrap();
    let n = 10_007;
    let c = vector_add(&dev, &mut q, n);
    q.synchronize().unwrap();
    let c = c.as_slice().unwrap();
    assert_eq!(c.len(), n);
    for (i, &x) in c.iter().enumerate() {
        assert_eq!(x, (3 * i) as f32, "c[{i}]");
    }
}

/// struct Mixed { int i; float f; double d; } as the kernel takes it.
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable, Debug)]
struct Mixed {
    i: i32,
    f: f32,
    d: f64,
}

#[test]
fn every_parameter_type_lands_at_its_offset() {
    let dev = dev();
    let k = kernel(&dev, "mixed_params");
    let mut out = dev.alloc::<u32>(11).unwrap();
    let s = Mixed {
        i: -7,
        f: 2.5,
        d: -0.125,
    };
    let mut q = dev.queue().unwrap();
    // SAFETY: mixed_params writes out[0..11] only.
    unsafe {
        q.launch(&k)
            .arg(&-3i8)
            .arg(&-300i16)
            .arg(&-70000i32)
            .arg(&-(1i64 << 40))
            .arg_mut(&mut out)
            .arg(&s)
            .arg(&6.75f64)
            .record()
            .unwrap();
    }
    q.synchronize().unwrap();
    let o = out.to_vec().unwrap();
    let d = (-(1i64 << 40)) as u64;
    let sd = (-0.125f64).to_bits();
    let e = 6.75f64.to_bits();
    assert_eq!(
        o,
        [
            -3i32 as u32,
            -300i32 as u32,
            -70000i32 as u32,
            d as u32,
            (d >> 32) as u32,
            -7i32 as u32,
            2.5f32.to_bits(),
            sd as u32,
            (sd >> 32) as u32,
            e as u32,
            (e >> 32) as u32
        ]
    );
}

#[test]
fn a_2_kib_struct_parameter_passes_by_value() {
    #[repr(C)]
    #[derive(Clone, Copy, Pod, Zeroable)]
    struct Big {
        v: [u32; 512],
    }
    let dev = dev();
    let k = kernel(&dev, "big_params");
    let mut out = dev.alloc::<u32>(512).unwrap();
    let mut big = Big { v: [0; 512] };
    for (i, v) in big.v.iter_mut().enumerate() {
        *v = 1000 + i as u32;
    }
    let mut q = dev.queue().unwrap();
    // SAFETY: big_params writes out[0..512].
    unsafe {
        q.launch(&k)
            .block(512)
            .arg_mut(&mut out)
            .arg(&big)
            .record()
            .unwrap();
    }
    q.synchronize().unwrap();
    assert_eq!(out.to_vec().unwrap(), big.v);
}

/// Records a launch of `vector_add` with the arguments `f` gives and returns the error.
fn vector_add_error(
    f: impl FnOnce(&mut tegragpu::Launch<'_, Queue>, &DeviceBuffer<f32>, &mut DeviceBuffer<f32>),
) -> tegragpu::Error {
    let dev = dev();
    let k = kernel(&dev, "vector_add");
    let a = dev.alloc::<f32>(4).unwrap();
    let mut c = dev.alloc::<f32>(4).unwrap();
    let mut q = dev.queue().unwrap();
    let mut l = q.launch(&k);
    l.grid(1).block(4);
    f(&mut l, &a, &mut c);
    // SAFETY: refused before anything runs (and vector_add stays within 4 elements).
    let err = unsafe { l.record() }.expect_err("the launch must be refused");
    assert_eq!(err.status, Status::InvalidLaunch, "{err}");
    // Nothing was recorded: the queue has no work, so the views of c are free at once.
    drop(q);
    assert_eq!(c.to_vec().unwrap(), [0.0; 4]);
    err
}

#[test]
fn too_few_arguments_are_refused_naming_the_counts() {
    let err = vector_add_error(|l, a, c| {
        l.arg(a).arg(a).arg_mut(c);
    });
    assert_eq!(
        err.message,
        "Launch::record: kernel \"vector_add\" has 4 parameters, 3 arguments were given"
    );
}

#[test]
fn too_many_arguments_are_refused_naming_the_extra_one() {
    let err = vector_add_error(|l, a, c| {
        l.arg(a).arg(a).arg_mut(c).arg(&4u32).arg(&1.0f32);
    });
    assert_eq!(
        err.message,
        "Launch::arg: kernel \"vector_add\" has 4 parameters; argument 4 (f32) is one too many"
    );
}

#[test]
fn a_wrong_size_is_refused_naming_kernel_parameter_and_sizes() {
    let err = vector_add_error(|l, a, c| {
        l.arg(a).arg(a).arg_mut(c).arg(&4u64);
    });
    assert_eq!(
        err.message,
        "Launch::arg: kernel \"vector_add\", parameter 3 (offset 24) is 4 bytes; argument 3 (u64) is 8 bytes"
    );
    // A buffer where the kernel takes a 4-byte value.
    let err = vector_add_error(|l, a, c| {
        l.arg(a).arg(a).arg_mut(c).arg(a);
    });
    assert_eq!(
        err.message,
        "Launch::arg: kernel \"vector_add\", parameter 3 (offset 24) is 4 bytes; argument 3 (DeviceBuffer<f32>) is 8 bytes"
    );
    // A 4-byte value where the kernel takes a pointer; the first mistake is the one reported.
    let err = vector_add_error(|l, a, c| {
        l.arg(&1.0f32).arg(a).arg_mut(c).arg(&0u8);
    });
    assert_eq!(
        err.message,
        "Launch::arg: kernel \"vector_add\", parameter 0 (offset 0) is 8 bytes; argument 0 (f32) is 4 bytes"
    );
}

#[test]
fn an_argument_whose_alignment_the_offset_does_not_allow_is_refused() {
    let dev = dev();
    let k = kernel(&dev, "mixed_params");
    let mut out = dev.alloc::<u32>(11).unwrap();
    let mut q = dev.queue().unwrap();
    // Mixed is 16 bytes at offset 24 (8-byte aligned); a u128 needs 16.
    let err = unsafe {
        q.launch(&k)
            .arg(&0i8)
            .arg(&0i16)
            .arg(&0i32)
            .arg(&0i64)
            .arg_mut(&mut out)
            .arg(&0u128)
            .arg(&0f64)
            .record()
    }
    .unwrap_err();
    assert_eq!(err.status, Status::InvalidLaunch);
    let align = std::mem::align_of::<u128>();
    if align > 8 {
        assert_eq!(
            err.message,
            format!(
                "Launch::arg: kernel \"mixed_params\", parameter 5 is at offset 24, which is not a multiple \
                 of the {align}-byte alignment of argument 5 (u128): the parameter has another type"
            )
        );
    } else {
        panic!("u128 is {align}-byte aligned on this target: the case needs another type");
    }
}

#[test]
fn launch_shape_errors_name_the_rust_call() {
    let dev = dev();
    let k = kernel(&dev, "bounded_128");
    let mut out = dev.alloc::<u32>(256).unwrap();
    let mut q = dev.queue().unwrap();
    let err = unsafe { q.launch(&k).block(256).arg_mut(&mut out).record() }.unwrap_err();
    assert_eq!(err.status, Status::InvalidLaunch);
    assert!(
        err.message.starts_with("Launch::record: ") && err.message.contains("bounded_128"),
        "{err}"
    );
    let mut cq = dev.copy_queue().unwrap();
    let err = unsafe { cq.launch(&k).block(128).arg_mut(&mut out).record() }.unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    assert!(
        err.message.starts_with("Launch::record: ") && err.message.contains("copy queue"),
        "{err}"
    );
}

#[test]
fn recording_twice_launches_twice() {
    let dev = dev();
    let k = kernel(&dev, "increment");
    let mut p = dev.alloc::<u64>(1).unwrap();
    let mut q = dev.queue().unwrap();
    let mut l = q.launch(&k);
    l.arg_mut(&mut p).arg(&5u64);
    // SAFETY: increment writes p[0].
    unsafe {
        l.record().unwrap();
        l.record().unwrap();
    }
    q.synchronize().unwrap();
    assert_eq!(p.to_vec().unwrap(), [10]);
}

#[test]
fn buffer_lengths_and_ranges_are_checked() {
    let dev = dev();
    assert_eq!(
        dev.alloc::<u32>(0).unwrap_err().message,
        "Device::alloc: len is 0 (a buffer holds at least one u32)"
    );
    assert_eq!(
        dev.alloc::<()>(4).unwrap_err().message,
        "Device::alloc: the element type () has size 0"
    );
    let mut small = dev.alloc::<u32>(2).unwrap();
    let big = dev.alloc_from(&[1u32, 2, 3]).unwrap();
    assert_eq!(
        small.copy_from_host(&[1, 2, 3]).unwrap_err().message,
        "DeviceBuffer::copy_from_host: the source has 3 elements, the buffer 2"
    );
    let mut three = [0u32; 3];
    assert_eq!(
        small.copy_to_host(&mut three).unwrap_err().message,
        "DeviceBuffer::copy_to_host: the destination has 3 elements, the buffer 2"
    );
    let mut q = dev.queue().unwrap();
    let err = q.copy(&mut small, &big).unwrap_err();
    assert_eq!(
        err.message,
        "Queue::copy: dst has 2 elements, src 3: copy_range copies part of a buffer"
    );
    // Element ranges become byte ranges: 2 elements from index 2 of a 3-element buffer.
    let err = q.copy_range(&mut small, 0, &big, 2, 2).unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    assert!(
        err.message
            .starts_with("Queue::copy: src: range [offset 8, +8 bytes)")
            && err.message.contains("12 bytes"),
        "{err}"
    );
    q.copy_range(&mut small, 1, &big, 2, 1).unwrap();
    q.synchronize().unwrap();
    assert_eq!(small.to_vec().unwrap(), [0, 3]);
    let mut cb = dev.cmdbuf().unwrap();
    assert_eq!(
        cb.copy(&mut small, &big).unwrap_err().message,
        "CmdBuf::copy: dst has 2 elements, src 3"
    );
}

#[test]
fn host_views_refuse_work_that_is_recorded_but_not_submitted() {
    let dev = dev();
    let k = kernel(&dev, "fill_u32");
    let mut out = dev.alloc::<u32>(64).unwrap();
    let mut q = dev.queue().unwrap();
    // SAFETY: fill_u32 writes out[0..64].
    unsafe {
        q.launch(&k)
            .block(64)
            .arg_mut(&mut out)
            .arg(&9u32)
            .arg(&64u32)
            .record()
            .unwrap();
    }
    // A buffer only read by recorded work: shared views are fine, mutable ones are not.
    let copy_src = dev.alloc_from(&[4u32; 64]).unwrap();
    let mut copy_dst = dev.alloc::<u32>(64).unwrap();
    q.copy(&mut copy_dst, &copy_src).unwrap();
    assert_eq!(copy_src.as_slice().unwrap()[0], 4);
    let err = out.as_slice().unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    assert!(
        err.message.starts_with("DeviceBuffer::as_slice: buffer 0x")
            && err.message.contains("not submitted")
            && err.message.contains("Queue::submit"),
        "{err}"
    );
    let mut copy_src = copy_src;
    let err = copy_src.as_mut_slice().unwrap_err();
    assert!(err.message.contains("not submitted"), "{err}");
    q.submit().unwrap();
    // Submitted: the views wait for the work.
    assert_eq!(out.to_vec().unwrap(), [9; 64]);
    assert_eq!(copy_dst.to_vec().unwrap(), [4; 64]);
    copy_src.as_mut_slice().unwrap()[0] = 5;
}

#[test]
fn a_host_view_waits_for_the_gpu_work_that_writes_the_buffer() {
    let dev = dev();
    let k = kernel(&dev, "fill_u32");
    let go = dev.signal(0).unwrap();
    let mut out = dev.alloc::<u32>(1024).unwrap();
    let mut q = dev.queue().unwrap();
    // The launch waits for `go`, which another thread sets later.
    q.wait(&go, 1).unwrap();
    // SAFETY: fill_u32 writes out[0..1024].
    unsafe {
        q.launch(&k)
            .grid(8)
            .block(128)
            .arg_mut(&mut out)
            .arg(&0xabcu32)
            .arg(&1024u32)
            .record()
            .unwrap();
    }
    q.submit().unwrap();
    let setter = {
        let go = go.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            go.set(1);
        })
    };
    // Returns only once the fill is done: every element is already written.
    let view = out.as_slice().unwrap();
    assert!(view.iter().all(|&x| x == 0xabc));
    drop(view);
    setter.join().unwrap();
}

#[test]
fn dropping_a_queue_submits_its_work_for_the_host_views() {
    let dev = dev();
    let mut q = dev.queue().unwrap();
    let c = vector_add(&dev, &mut q, 300);
    drop(q);
    assert_eq!(c.to_vec().unwrap()[299], 897.0);
}

#[test]
fn a_replay_is_refused_while_a_host_view_conflicts() {
    let dev = dev();
    let k = kernel(&dev, "vector_add");
    let a = dev.alloc_from(&[1.0f32; 32]).unwrap();
    let mut b = dev.alloc_from(&[2.0f32; 32]).unwrap();
    let mut c = dev.alloc::<f32>(32).unwrap();
    let mut cb = dev.cmdbuf().unwrap();
    // SAFETY: vector_add reads a and b, writes c (32 elements).
    unsafe {
        cb.launch(&k)
            .block(32)
            .arg(&a)
            .arg(&b)
            .arg_mut(&mut c)
            .arg(&32u32)
            .record()
            .unwrap();
    }
    cb.finish().unwrap();
    let mut q = dev.queue().unwrap();
    // A shared view of a buffer the command buffer only reads: no conflict.
    {
        let va = a.as_slice().unwrap();
        q.replay(&mut cb).unwrap();
        q.synchronize().unwrap();
        assert_eq!(va[0], 1.0);
    }
    // A shared view of the buffer it writes.
    let vc = c.as_slice().unwrap();
    assert_eq!(vc[31], 3.0);
    let err = q.replay(&mut cb).unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    assert!(
        err.message
            .starts_with("Queue::replay: buffer 2 of the command buffer")
            && err
                .message
                .contains("which the command buffer writes, has a live host view (1 HostSlice)"),
        "{err}"
    );
    drop(vc);
    // A mutable view of a buffer it reads.
    {
        let mut vb = b.as_mut_slice().unwrap();
        vb.fill(10.0);
        let err = q.replay(&mut cb).unwrap_err();
        assert!(
            err.message
                .contains("which the command buffer reads, has a live host view (a HostSliceMut)"),
            "{err}"
        );
    }
    // The refused replays left nothing behind: c is free, and the next replay runs.
    assert_eq!(c.as_slice().unwrap()[0], 3.0);
    q.replay(&mut cb).unwrap();
    // Recorded, not submitted: a view of c is refused until the queue submits.
    assert!(c.as_slice().unwrap_err().message.contains("not submitted"));
    q.submit().unwrap();
    assert_eq!(c.to_vec().unwrap(), [11.0; 32]);
}

#[test]
fn a_command_buffer_keeps_its_buffers_allocated() {
    let dev = dev();
    let k = kernel(&dev, "vector_add");
    let n = 4096;
    let a = dev.alloc_from(&vec![1.0f32; n]).unwrap();
    let b = dev.alloc_from(&vec![2.0f32; n]).unwrap();
    let mut c = dev.alloc::<f32>(n).unwrap();
    let src = dev.alloc_from(&(0..n as u32).collect::<Vec<_>>()).unwrap();
    let mut dst = dev.alloc::<u32>(n).unwrap();
    let mut cb = dev.cmdbuf().unwrap();
    // SAFETY: vector_add reads a and b, writes c (n elements).
    unsafe {
        cb.launch(&k)
            .grid(n as u32 / 128)
            .block(128)
            .arg(&a)
            .arg(&b)
            .arg_mut(&mut c)
            .arg(&(n as u32))
            .record()
            .unwrap();
    }
    cb.copy(&mut dst, &src).unwrap();
    cb.finish().unwrap();
    drop((a, b, src));
    // Buffers allocated now must not get the memory of those the command buffer holds.
    let others: Vec<DeviceBuffer<f32>> = (0..3)
        .map(|_| dev.alloc_from(&vec![-5.0f32; n]).unwrap())
        .collect();
    let mut q = dev.queue().unwrap();
    q.replay(&mut cb).unwrap();
    q.synchronize().unwrap();
    assert_eq!(c.to_vec().unwrap(), vec![3.0; n]);
    assert_eq!(dst.to_vec().unwrap(), (0..n as u32).collect::<Vec<_>>());
    for o in &others {
        assert_eq!(o.to_vec().unwrap(), vec![-5.0; n]);
    }
}

#[test]
fn command_buffer_updates_are_checked() {
    let dev = dev();
    let k = kernel(&dev, "increment");
    let s = dev.signal(0).unwrap();
    let mut p = dev.alloc::<u64>(1).unwrap();
    let mut cb = dev.cmdbuf().unwrap();
    // SAFETY: increment writes p[0].
    let launch = unsafe { cb.launch(&k).arg_mut(&mut p).arg(&1u64).record().unwrap() };
    let signal = cb.signal(&s, 1).unwrap();
    assert_eq!((launch, signal, cb.len()), (0, 1, 2));
    // Updates need a finished command buffer.
    let err = unsafe { cb.update(launch, &k).arg_mut(&mut p).arg(&2u64).record() }.unwrap_err();
    assert!(
        err.message.starts_with("CmdBuf::update: ") && err.message.contains("not finished"),
        "{err}"
    );
    cb.finish().unwrap();
    let err = unsafe { cb.update(signal, &k).arg_mut(&mut p).arg(&2u64).record() }.unwrap_err();
    assert_eq!(err.message, "CmdBuf::update: node 1 is not a launch");
    let err = unsafe { cb.update(7, &k).arg_mut(&mut p).arg(&2u64).record() }.unwrap_err();
    assert_eq!(
        err.message,
        "CmdBuf::update: node 7 does not exist (the command buffer has 2 nodes)"
    );
    let err = unsafe { cb.update(launch, &k).arg_mut(&mut p).record() }.unwrap_err();
    assert_eq!(
        err.message,
        "Launch::record: kernel \"increment\" has 2 parameters, 1 arguments were given"
    );
    let err = unsafe { cb.launch(&k).arg_mut(&mut p).arg(&2u64).record() }.unwrap_err();
    assert!(
        err.message.starts_with("CmdBuf::launch: ") && err.message.contains("finished"),
        "{err}"
    );
    // A new grid, and a new argument.
    unsafe {
        cb.update(launch, &k)
            .grid(2)
            .arg_mut(&mut p)
            .arg(&100u64)
            .record()
            .unwrap();
    }
    let mut q = dev.queue().unwrap();
    q.replay(&mut cb).unwrap();
    q.synchronize().unwrap();
    // increment adds from block 0's thread 0 only.
    assert_eq!(p.to_vec().unwrap(), [100]);
    assert_eq!(s.value(), 1);
}

#[test]
fn errors_name_the_rust_call_and_keep_the_library_message() {
    let dev = dev();
    let err = dev
        .queue_with(tegragpu::QueueKind::Compute, 100)
        .unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    assert_eq!(
        err.message,
        "Device::queue: depth 100 must be a power of two from 16 to 65536"
    );
    let err = fixtures(&dev).kernel("nope").unwrap_err();
    assert_eq!(err.status, Status::NotFound);
    assert!(
        err.message
            .starts_with("Module::kernel: kernel \"nope\" is not in the module; it has: ")
            && err.message.contains("vector_add"),
        "{err}"
    );
    let err = dev.load_module(b"garbage").unwrap_err();
    assert!(err.message.starts_with("Device::load_module: "), "{err}");
    let s = dev.signal(0).unwrap();
    let err = s.wait(1, Duration::from_millis(1)).unwrap_err();
    assert_eq!(err.status, Status::Timeout);
    assert!(err.message.starts_with("Signal::wait: "), "{err}");
}

#[test]
fn the_objects_can_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<Device>();
    send_sync::<DeviceBuffer<f32>>();
    send_sync::<Module>();
    send_sync::<Kernel>();
    send_sync::<tegragpu::Signal>();
    send_sync::<tegragpu::CmdBuf>();
    send::<Queue>();
    // And they work there: a buffer filled on one thread, read on another.
    let dev = dev();
    let buf = dev.alloc_from(&[3u8; 16]).unwrap();
    let sum =
        std::thread::spawn(move || buf.to_vec().unwrap().iter().map(|&x| x as u32).sum::<u32>())
            .join()
            .unwrap();
    assert_eq!(sum, 48);
}

#[test]
fn objects_of_another_device_are_refused() {
    let (d1, d2) = (dev(), dev());
    let k1 = kernel(&d1, "fill_u32");
    let mut b2 = d2.alloc::<u32>(4).unwrap();
    let mut q1 = d1.queue().unwrap();
    let err = unsafe {
        q1.launch(&k1)
            .arg_mut(&mut b2)
            .arg(&1u32)
            .arg(&4u32)
            .record()
    }
    .unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    assert!(
        err.message.starts_with(
            "Launch::arg: kernel \"fill_u32\", argument 0 (DeviceBuffer<u32>) is a buffer of another device"
        ),
        "{err}"
    );
    // A kernel of another device on this queue.
    let k2 = kernel(&d2, "fill_u32");
    let mut b1 = d1.alloc::<u32>(4).unwrap();
    let mut q2 = d2.queue().unwrap();
    let err = unsafe {
        q1.launch(&k2)
            .arg_mut(&mut b2)
            .arg(&1u32)
            .arg(&4u32)
            .record()
    }
    .unwrap_err();
    assert!(
        err.message
            .starts_with("Launch::record: the kernel belongs to another device"),
        "{err}"
    );
    let err = q2.copy(&mut b1, &b2).unwrap_err();
    assert!(
        err.message
            .starts_with("Queue::copy: dst belongs to another device"),
        "{err}"
    );
    let s1 = d1.signal(0).unwrap();
    let err = q2.signal(&s1, 1).unwrap_err();
    assert!(
        err.message
            .starts_with("Queue::signal: the signal belongs to another device"),
        "{err}"
    );
    let err = q2.wait(&s1, 1).unwrap_err();
    assert!(
        err.message
            .starts_with("Queue::wait: the signal belongs to another device"),
        "{err}"
    );
    // Nothing was recorded: both queues are idle, the buffers untouched.
    q1.synchronize().unwrap();
    q2.synchronize().unwrap();
    assert_eq!(b1.to_vec().unwrap(), [0; 4]);
    assert_eq!(b2.to_vec().unwrap(), [0; 4]);
}
