// The quickstart of examples/quickstart.c in C# (also in the README): a short chat scored
// by recency and kind, sliced greedily into the budget, placed chronologically.
using System;
using System.IO;
using System.Linq;

namespace Ctxpack.Tests
{
    static class Quickstart
    {
        public static void Run(TextWriter output)
        {
            var start = new DateTimeOffset(2025, 5, 1, 10, 0, 0, TimeSpan.Zero);
            var chat = new[]
            {
                new ContextItem("You are a concise travel assistant.", 12) { Kind = "SystemPrompt", Pinned = true },
                new ContextItem("User: I want to visit Lisbon in May.", 14) { Kind = "Message" },
                new ContextItem("Assistant: Great choice! May is mild and sunny, ideal for walking tours.", 40) { Kind = "Message" },
                new ContextItem("Tool: flights to LIS from 89 EUR", 25) { Kind = "ToolOutput" },
                new ContextItem("Memory: the user prefers trains to planes.", 10) { Kind = "Memory" },
                new ContextItem("User: and how do I get there by train?", 12) { Kind = "Message" },
            };
            for (int i = 0; i < chat.Length; i++) chat[i].Timestamp = start.AddMinutes(i);

            // Recency and kind (2:1), greedy slicing, chronological placement. The pipeline
            // keeps its own references, so the components can be disposed right away.
            Pipeline pipeline;
            using (var recency = Scorer.Recency())
            using (var kind = Scorer.Kind())
            using (var scorer = Scorer.Composite(recency.WithWeight(2), kind.WithWeight(1)))
            using (var slicer = Slicer.Greedy())
            using (var placer = Placer.Chronological())
            {
                pipeline = new Pipeline(scorer, slicer, placer);
            }

            // A 100-token window: aim for 70 and keep 20 for the model's answer.
            using (pipeline)
            using (var budget = new Budget(maxTokens: 100, targetTokens: 70, outputReserve: 20))
            {
                var result = pipeline.Run(chat, budget);
                output.Write($"ctxpack {Library.Version} selected {result.Indices.Count} of {chat.Length} items:\n");
                for (int k = 0; k < result.Indices.Count; k++)
                {
                    var i = result.Indices[k];
                    output.Write($"  [{i}] {result.Scores[k].ToString("F3", System.Globalization.CultureInfo.InvariantCulture)}  {chat[i].Content}\n");
                }
            }
        }
    }

    static class QuickstartTests
    {
        [Test]
        public static void QuickstartPrintsWhatTheCProgramPrints()
        {
            var output = new StringWriter();
            Quickstart.Run(output);
            var expected = string.Join("", new[]
            {
                $"ctxpack {Library.Version} selected 4 of 6 items:\n",
                "  [0] 1.000  You are a concise travel assistant.\n",
                "  [3] 0.533  Tool: flights to LIS from 89 EUR\n",
                "  [4] 0.767  Memory: the user prefers trains to planes.\n",
                "  [5] 0.733  User: and how do I get there by train?\n",
            });
            Assert.Equal(expected, output.ToString(), "quickstart output");
            // run.sh also runs examples/quickstart.c and passes its output here.
            var cOutput = Environment.GetEnvironmentVariable("CTXPACK_QUICKSTART_C_OUTPUT");
            if (!string.IsNullOrEmpty(cOutput))
            {
                Assert.Equal(File.ReadAllText(cOutput), output.ToString(), "C quickstart output");
            }
        }
    }
}
