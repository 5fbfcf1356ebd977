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
        const int FirstBlockSize = 16 << 10;
        const int MaxBlockSize = 1 << 20;
        const int Align = 16;

        // Lone surrogates are an error here rather than silently replaced.
        static readonly Encoding Utf8 = new UTF8Encoding(false, true);

        readonly List<IntPtr> blocks = new List<IntPtr>();
        byte* block;
        int used, size;
        // The size of the next block: doubled after each block up to MaxBlockSize, so a
        // large batch of items takes a handful of allocations.
        int nextSize = FirstBlockSize;

        /// n zeroed bytes, aligned for any of the ABI's structs (the struct_size rule
        /// requires unknown fields to be zero).
        internal IntPtr Alloc(int n)
        {
            if (n <= 0) n = 1;
            int start = (used + Align - 1) & ~(Align - 1);
            if (block == null || start + n > size)
            {
                size = Math.Max(nextSize, n);
                nextSize = Math.Min(nextSize * 2, MaxBlockSize);
                var p = Marshal.AllocHGlobal(size);
                blocks.Add(p);
                block = (byte*)p;
                Zero(block, size);
                start = 0;
            }
            used = start + n;
            return (IntPtr)(block + start);
        }

        static void Zero(byte* p, int n)
        {
#if NETCOREAPP
            new Span<byte>(p, n).Clear();
#else
            // Blocks are 16-byte aligned (AllocHGlobal) and sizes multiples of 8 but for a
            // lone large allocation: clear by words, then the tail.
            long* words = (long*)p;
            int count = n / 8;
            for (int i = 0; i < count; i++) words[i] = 0;
            for (int i = count * 8; i < n; i++) p[i] = 0;
#endif
        }

        /// An array of `count` zeroed T.
        internal IntPtr Array<T>(int count) where T : struct =>
            count == 0 ? IntPtr.Zero : Alloc(checked(Marshal.SizeOf(typeof(T)) * count));

        /// A string as UTF-8 {ptr, len}; null or "" is {NULL, 0}. The string is encoded
        /// straight into the arena (no intermediate byte array): ASCII, the common case of
        /// kinds, tags and most contents, by a copy loop; anything else by the encoder. (An
        /// ASCII attempt that meets another character leaves its bytes unused in the arena:
        /// handing them back would break the zeroed-memory promise of Alloc.)
        internal Native.Str Str(string s)
        {
            if (string.IsNullOrEmpty(s)) return default(Native.Str);
            fixed (char* chars = s)
            {
                int n = s.Length;
                var ascii = (byte*)Alloc(n);
                int i = 0;
                while (i < n && chars[i] < 0x80)
                {
                    ascii[i] = (byte)chars[i];
                    i++;
                }
                if (i == n) return new Native.Str { Ptr = (IntPtr)ascii, Len = (UIntPtr)n };
                int count = Utf8.GetByteCount(chars, n);
                var p = Alloc(count);
                Utf8.GetBytes(chars, n, (byte*)p, count);
                return new Native.Str { Ptr = p, Len = (UIntPtr)count };
            }
        }

        public void Dispose()
        {
            foreach (var p in blocks) Marshal.FreeHGlobal(p);
            blocks.Clear();
            block = null;
        }
    }
}
