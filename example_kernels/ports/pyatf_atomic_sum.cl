// Kernel of pyATF's example examples/feature_demonstration/result_check/result_check.py
// (https://github.com/atf-tuner/pyATF, commit a64ea16b8d1f0aa562faebc7969d8bf3ba38d4cb), where it
// is a Python string; copied unchanged below this comment.
// Copyright (c) 2024 Ari Rasch, Richard Schulze. MIT License: see LICENSE-pyATF in this folder.
// WPT (elements per work-item) is a -D define; the work-group size LS is set by the launch.
void atomic_add_f(volatile global float* addr, const float val) {
    private float old, sum;
    do {
        old = *addr;
        sum = old+val;
    } while(atomic_cmpxchg((volatile global int*)addr, as_int(old), as_int(sum))!=as_int(old));
}

__kernel void sum( const int N, const __global float* x, __global float* y )
{
    for( int w = 0 ; w < WPT ; ++w )
    {
        const int index = w * get_global_size(0) + get_global_id(0);
        atomic_add_f( y , x[ index ] );
    }
}
