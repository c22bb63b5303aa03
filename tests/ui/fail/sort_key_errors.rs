use gpu_scan::prelude::*;

#[scan_op]
#[repr(C)]
#[derive(Clone, Copy)]
struct Task {
    priority: i32,
    deadline: f32,
    done: bool,
}

// A bool is no sort key.
#[sort_key(record = Task, key = (i32, bool), by = |t| (t.priority, t.done))]
struct WithBool;

// A struct is no component: its fields are.
#[sort_key(record = Task, key = (Task, u32), by = |t| (t, 0))]
struct WithStruct;

// At most four components.
#[sort_key(record = Task, key = (u8, u8, u8, u8, u8), by = |t| (0, 0, 0, 0, 0))]
struct FiveComponents;

// Two components, one given.
#[sort_key(record = Task, key = (i32, f32), by = |t| t.priority)]
struct TooFew;

// Two components, three given (in a block).
#[sort_key(record = Task, key = (i32, f32), by = |t| { let p = t.priority; (p, t.deadline, 0) })]
struct TooMany;

// A component outside the operators' subset.
#[sort_key(record = Task, key = (i32, f32), by = |t| (t.priority, t.deadline.sqrt_approx()))]
struct UnknownMethod;

// One record, one parameter.
#[sort_key(record = Task, key = i32, by = |a, b| a.priority)]
struct TwoParams;

// The function is missing.
#[sort_key(record = Task, key = i32)]
struct NoFunction;

// The fn form's return type is not the key.
#[sort_key(record = Task, key = (i32, f32), by = fn urgency(t: Task) -> (i32, f64) { (t.priority, t.deadline as f64) })]
struct WrongReturn;

// An error in a `let` the components share, reported once.
#[sort_key(record = Task, key = (i32, f32), by = |t| { let d = t.deadline.sqrt_approx(); (t.priority, d) })]
struct SharedLet;

fn main() {}
