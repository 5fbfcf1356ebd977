using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Text;

namespace Ctxpack
{
    /// Unmanaged memory for the arguments of one library call: descriptors, arrays and
    /// UTF-8 strings that the library copies during the call. Everything is freed on
    /// Dispose, right after the call. (Pinning managed arrays would work for flat data,
    /// but item descriptors point to strings and arrays, so they are built here instead.)
    internal sealed unsafe class NativeArena : IDisposable
    {
        const int BlockSize = 16 << 10;
        const int Align = 16;

        // Lone surrogates are an error here rather than silently replaced.
        static readonly Encoding Utf8 = new UTF8Encoding(false, true);

        readonly List<IntPtr> blocks = new List<IntPtr>();
        byte* block;
        int used, size;

        /// n zeroed bytes, aligned for any of the ABI's structs (the struct_size rule
        /// requires unknown fields to be zero).
        internal IntPtr Alloc(int n)
        {
            if (n <= 0) n = 1;
            int start = (used + Align - 1) & ~(Align - 1);
            if (block == null || start + n > size)
            {
                size = Math.Max(BlockSize, n);
                var p = Marshal.AllocHGlobal(size);
                blocks.Add(p);
                block = (byte*)p;
                for (int i = 0; i < size; i++) block[i] = 0;
                start = 0;
            }
            used = start + n;
            return (IntPtr)(block + start);
        }

        /// An array of `count` zeroed T.
        internal IntPtr Array<T>(int count) where T : struct =>
            count == 0 ? IntPtr.Zero : Alloc(checked(Marshal.SizeOf(typeof(T)) * count));

        /// A string as UTF-8 {ptr, len}; null or "" is {NULL, 0}.
        internal Native.Str Str(string s)
        {
            if (string.IsNullOrEmpty(s)) return default(Native.Str);
            var bytes = Utf8.GetBytes(s);
            var p = Alloc(bytes.Length);
            Marshal.Copy(bytes, 0, p, bytes.Length);
            return new Native.Str { Ptr = p, Len = (UIntPtr)bytes.Length };
        }

        public void Dispose()
        {
            foreach (var p in blocks) Marshal.FreeHGlobal(p);
            blocks.Clear();
            block = null;
        }
    }
}
