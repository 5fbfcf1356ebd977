// A program outside the ctxpack repository that uses the C# binding from its NuGet package
// layout (bindings/csharp/pack.sh). scripts/test-install.sh compiles it with mcs against the
// package's lib/netstandard2.0/Ctxpack.dll, deploys it the way a build of a linux-x64
// application does (the assembly and runtimes/linux-x64/native/libctxpack.so in the
// application's folder) and runs it with LD_LIBRARY_PATH unset. It prints one line naming
// the version of the loaded library and exits non-zero when anything is wrong.
using System;
using Ctxpack;

static class App
{
    static int Main()
    {
        try
        {
            Run();
            return 0;
        }
        catch (Exception e)
        {
            Console.Error.WriteLine("consumer: " + e);
            return 1;
        }
    }

    static void Run()
    {
        var items = new[]
        {
            new ContextItem("You are a helpful assistant.", 8) { Kind = "SystemPrompt", Pinned = true },
            new ContextItem("User: hello", 4) { Kind = "Message" },
            new ContextItem("Assistant: hi, how can I help?", 9) { Kind = "Message" },
        };
        using (var scorer = Scorer.Kind())
        using (var slicer = Slicer.Greedy())
        using (var placer = Placer.Chronological())
        using (var pipeline = new Pipeline(scorer, slicer, placer))
        {
            // Everything fits in a 100-token window, so everything is selected.
            int selected;
            using (var roomy = new Budget(maxTokens: 100, targetTokens: 100))
            {
                selected = pipeline.Run(items, roomy).Indices.Count;
            }
            if (selected != items.Length)
            {
                throw new Exception($"selected {selected} of {items.Length} items that all fit");
            }
            // The pinned item alone exceeds a 5-token window: the library's status reaches C#.
            using (var tight = new Budget(maxTokens: 5, targetTokens: 5))
            {
                try
                {
                    pipeline.Run(items, tight);
                    throw new Exception("a pinned item over the budget was accepted");
                }
                catch (CtxpackException e) when (e.Status == Status.PinnedExceedsBudget)
                {
                }
            }
            Console.WriteLine($"ctxpack {Library.Version}: {selected} of {items.Length} items selected");
        }
    }
}
