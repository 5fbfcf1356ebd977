// A reader for the TOML subset the conformance vectors use (shared/spec/08 §2): tables,
// arrays of tables (nested under the latest element), key = value with basic and literal
// strings, integers, floats, booleans, offset date-times (seconds optional, fractions to
// the nanosecond), arrays (possibly over several lines) and inline tables. Not a general
// TOML parser: enough to read the vectors without a dependency.
using System;
using System.Collections.Generic;
using System.Globalization;
using System.Linq;
using System.Text;
using System.Text.RegularExpressions;

namespace Ctxpack.Tests
{
    using Table = Dictionary<string, object>;

    /// An offset date-time as nanoseconds since the Unix epoch (the ABI's unit).
    struct TomlInstant
    {
        public long UnixNanos;
    }

    static class Toml
    {
        static readonly Regex DateTime = new Regex(@"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d)(?::(\d\d)(?:\.(\d+))?)?(Z|[+-]\d\d:\d\d)");
        static readonly Regex Number = new Regex(@"^[+-]?(inf|nan|[0-9_]+(\.[0-9_]+)?([eE][+-]?[0-9_]+)?)");

        public static Table Parse(string text)
        {
            var root = new Table();
            var current = root;
            var lines = text.Split('\n');
            for (int n = 0; n < lines.Length; n++)
            {
                var line = lines[n].Trim();
                if (line.Length == 0 || line[0] == '#') continue;
                try
                {
                    if (line.StartsWith("[["))
                    {
                        var path = SplitKey(line.Substring(2, line.IndexOf("]]", StringComparison.Ordinal) - 2));
                        var parent = Descend(root, path.Take(path.Count - 1));
                        var last = path[path.Count - 1];
                        if (!(parent.TryGetValue(last, out var v) && v is List<Table> list)) parent[last] = list = new List<Table>();
                        current = new Table();
                        list.Add(current);
                    }
                    else if (line[0] == '[')
                    {
                        current = Descend(root, SplitKey(line.Substring(1, line.IndexOf(']') - 1)));
                    }
                    else
                    {
                        int eq = line.IndexOf('=');
                        if (eq < 0) throw new FormatException("expected key = value");
                        var src = line.Substring(eq + 1);
                        while (BracketDepth(src) > 0 && n + 1 < lines.Length) src += "\n" + lines[++n];
                        var p = new Parser(src);
                        var value = p.Value();
                        p.End();
                        var path = SplitKey(line.Substring(0, eq));
                        Descend(current, path.Take(path.Count - 1))[path[path.Count - 1]] = value;
                    }
                }
                catch (Exception e) when (!(e is FormatException && e.Message.StartsWith("line ")))
                {
                    throw new FormatException($"line {n + 1}: {e.Message}");
                }
            }
            return root;
        }

        static Table Descend(Table t, IEnumerable<string> path)
        {
            foreach (var k in path)
            {
                if (!t.TryGetValue(k, out var v)) t[k] = v = new Table();
                if (v is Table next) t = next;
                else if (v is List<Table> list) t = list[list.Count - 1];
                else throw new FormatException($"key {k} is not a table");
            }
            return t;
        }

        static List<string> SplitKey(string s) => s.Split('.').Select(p => p.Trim().Trim('"', '\'')).ToList();

        /// Unclosed [ and { outside strings and comments.
        static int BracketDepth(string s)
        {
            int depth = 0;
            char quote = '\0';
            for (int i = 0; i < s.Length; i++)
            {
                char c = s[i];
                if (quote != '\0')
                {
                    if (c == '\\' && quote == '"') i++;
                    else if (c == quote) quote = '\0';
                }
                else if (c == '"' || c == '\'') quote = c;
                else if (c == '#') { while (i < s.Length && s[i] != '\n') i++; }
                else if (c == '[' || c == '{') depth++;
                else if (c == ']' || c == '}') depth--;
            }
            return depth;
        }

        sealed class Parser
        {
            readonly string s;
            int i;

            public Parser(string s) { this.s = s; }

            void Skip()
            {
                while (i < s.Length)
                {
                    if (char.IsWhiteSpace(s[i])) i++;
                    else if (s[i] == '#') { while (i < s.Length && s[i] != '\n') i++; }
                    else return;
                }
            }

            public void End()
            {
                Skip();
                if (i < s.Length) throw new FormatException($"trailing text {s.Substring(i)}");
            }

            public object Value()
            {
                Skip();
                if (i >= s.Length) throw new FormatException("missing value");
                var rest = s.Substring(i);
                switch (rest[0])
                {
                    case '"':
                    case '\'':
                        return Str();
                    case '[':
                        return Array();
                    case '{':
                        return InlineTable();
                }
                if (rest.StartsWith("true")) { i += 4; return true; }
                if (rest.StartsWith("false")) { i += 5; return false; }
                var m = DateTime.Match(rest);
                if (m.Success)
                {
                    i += m.Length;
                    return Instant(m);
                }
                m = Number.Match(rest);
                if (m.Success)
                {
                    i += m.Length;
                    var clean = m.Value.Replace("_", "");
                    if (clean.IndexOfAny(new[] { '.', 'e', 'E', 'i', 'n' }) >= 0)
                    {
                        if (clean.EndsWith("inf")) return clean[0] == '-' ? double.NegativeInfinity : double.PositiveInfinity;
                        if (clean.EndsWith("nan")) return double.NaN;
                        var d = double.Parse(clean, CultureInfo.InvariantCulture);
                        // Mono's double.Parse drops the sign of -0.0 (vector d09 needs it).
                        return d == 0 && clean[0] == '-' ? -d : d;
                    }
                    return long.Parse(clean, CultureInfo.InvariantCulture);
                }
                throw new FormatException($"cannot read value at {rest}");
            }

            static TomlInstant Instant(Match m)
            {
                Func<int, int> G = k => m.Groups[k].Success ? int.Parse(m.Groups[k].Value, CultureInfo.InvariantCulture) : 0;
                var offset = m.Groups[8].Value == "Z" ? TimeSpan.Zero : TimeSpan.Parse(m.Groups[8].Value.TrimStart('+'), CultureInfo.InvariantCulture);
                var whole = new DateTimeOffset(G(1), G(2), G(3), G(4), G(5), G(6), offset);
                var fraction = m.Groups[7].Success ? m.Groups[7].Value.PadRight(9, '0').Substring(0, 9) : "0";
                return new TomlInstant { UnixNanos = (whole.ToUnixTimeSeconds() * 1000000000L) + long.Parse(fraction, CultureInfo.InvariantCulture) };
            }

            string Str()
            {
                char quote = s[i++];
                var b = new StringBuilder();
                while (i < s.Length)
                {
                    char c = s[i++];
                    if (c == quote) return b.ToString();
                    if (c != '\\' || quote == '\'') { b.Append(c); continue; }
                    char e = s[i++];
                    switch (e)
                    {
                        case 'n': b.Append('\n'); break;
                        case 't': b.Append('\t'); break;
                        case 'r': b.Append('\r'); break;
                        case '"': case '\\': b.Append(e); break;
                        case 'u':
                        case 'U':
                            int width = e == 'u' ? 4 : 8;
                            b.Append(char.ConvertFromUtf32(int.Parse(s.Substring(i, width), NumberStyles.HexNumber)));
                            i += width;
                            break;
                        default: throw new FormatException($"unknown escape \\{e}");
                    }
                }
                throw new FormatException("unterminated string");
            }

            List<object> Array()
            {
                i++; // [
                var list = new List<object>();
                while (true)
                {
                    Skip();
                    if (i < s.Length && s[i] == ']') { i++; return list; }
                    list.Add(Value());
                    Skip();
                    if (i < s.Length && s[i] == ',') i++;
                }
            }

            Table InlineTable()
            {
                i++; // {
                var t = new Table();
                while (true)
                {
                    Skip();
                    if (i >= s.Length) throw new FormatException("unterminated inline table");
                    if (s[i] == '}') { i++; return t; }
                    string key;
                    if (s[i] == '"' || s[i] == '\'') key = Str();
                    else
                    {
                        int start = i;
                        while (i < s.Length && s[i] != '=' && s[i] != ' ') i++;
                        key = s.Substring(start, i - start);
                    }
                    Skip();
                    if (i >= s.Length || s[i] != '=') throw new FormatException("expected = in inline table");
                    i++;
                    t[key] = Value();
                    Skip();
                    if (i < s.Length && s[i] == ',') i++;
                }
            }
        }
    }
}
