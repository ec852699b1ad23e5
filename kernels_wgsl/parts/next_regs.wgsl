// parts/next_regs.wgsl: eight named vec4 registers x0 .. x7, zeroed, that hold an
// invocation's share (at most 8 vec4s) of the next tile during this tile's arithmetic, to
// be stored after it. Statements, not functions: included inside the key-tile loop of a
// register-tiled main (parts/fused_reg_body.wgsl, plain_reg_scores.wgsl,
// plain_reg_pv.wgsl), which fills and stores them. Named registers, not an array, and
// zeroed explicitly, on every tile (README.md, "Rules these shaders keep").
    var x0 = vec4<f32>(0.0);
    var x1 = vec4<f32>(0.0);
    var x2 = vec4<f32>(0.0);
    var x3 = vec4<f32>(0.0);
    var x4 = vec4<f32>(0.0);
    var x5 = vec4<f32>(0.0);
    var x6 = vec4<f32>(0.0);
    var x7 = vec4<f32>(0.0);
