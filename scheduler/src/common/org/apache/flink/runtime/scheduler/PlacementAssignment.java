package org.apache.flink.runtime.scheduler;

import org.apache.flink.runtime.scheduler.strategy.ExecutionVertexID;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Which TaskManager each subtask of a job goes to, from the lines of its schedulercfg.
 *
 * <p>A line's label finds its subtask in the first of these ways that finds any (more than one is an error):
 * the exact {@code Name (i/n)}; the job vertex id in place of the name ({@code 0a448493b4782967b150582570326227 (1/2)});
 * the name with the Table planner's operator counters normalised ({@code Calc[2]} and {@code Calc[7]} are the same);
 * the seed schedulers' substring match ({@code Parse Bids (1/3)} inside {@code Source: Bids -> Parse Bids (1/3)}),
 * raw then normalised. Every subtask must be placed by exactly one line, or by the default line {@code *; <tm>}.
 */
final class PlacementAssignment {
    /** A subtask as the file names it. */
    static final class Subtask {
        final ExecutionVertexID id;
        final String vertexId;
        final String label; // "Name (i/n)", i 1-based
        final String normalised;

        Subtask(ExecutionVertexID id, String vertexId, String label) {
            this.id = id;
            this.vertexId = vertexId;
            this.label = label;
            this.normalised = normalise(label);
        }
    }

    private static final Pattern COUNTER = Pattern.compile("\\[\\d+\\]");
    private static final Pattern BY_ID = Pattern.compile("^([0-9a-fA-F]{32}) \\((\\d+)/(\\d+)\\)$");
    private static final int LIST_AT_MOST = 12;

    private PlacementAssignment() {}

    static String normalise(String label) {
        return COUNTER.matcher(label).replaceAll("[]");
    }

    /** subtask -> the line that places it (the default line for unlisted subtasks). */
    static Map<ExecutionVertexID, PlacementFiles.Line> assign(
            String jobName, List<Subtask> subtasks, List<PlacementFiles.Line> lines) {
        Map<ExecutionVertexID, PlacementFiles.Line> out = new LinkedHashMap<>();
        PlacementFiles.Line fallback = null;
        for (PlacementFiles.Line line : lines) {
            if (line.isDefault()) {
                if (fallback != null) {
                    throw new PlacementSchedulerException(line.where() + ": a second default line '*' (the first is line "
                            + fallback.number + ")");
                }
                fallback = line;
                continue;
            }
            Subtask found = find(jobName, subtasks, line);
            PlacementFiles.Line earlier = out.put(found.id, line);
            if (earlier != null) {
                throw new PlacementSchedulerException(line.where() + ": '" + line.label + "' places subtask '"
                        + found.label + "', which line " + earlier.number + " ('" + earlier.label + "') places already");
            }
        }
        List<String> missing = new ArrayList<>();
        for (Subtask s : subtasks) {
            if (!out.containsKey(s.id)) {
                if (fallback == null) {
                    missing.add(s.label);
                } else {
                    out.put(s.id, fallback);
                }
            }
        }
        if (!missing.isEmpty()) {
            String listed = missing.stream().limit(LIST_AT_MOST).map(m -> "'" + m + "'").collect(Collectors.joining(", "));
            String more = missing.size() > LIST_AT_MOST ? " and " + (missing.size() - LIST_AT_MOST) + " more" : "";
            throw new PlacementSchedulerException(lines.get(0).file + ": job '" + jobName + "': " + missing.size()
                    + " subtask(s) not placed: " + listed + more + " (list every subtask, or add a default line"
                    + " '*; <TaskManager>')");
        }
        return out;
    }

    /** A contingency section's lines: subtask -> its line (no default line; a subtask named twice is an error). */
    static Map<ExecutionVertexID, PlacementFiles.Line> assignSection(
            String jobName, List<Subtask> subtasks, PlacementFiles.Section section) {
        Map<ExecutionVertexID, PlacementFiles.Line> out = new LinkedHashMap<>();
        for (PlacementFiles.Line line : section.lines) {
            Subtask found = find(jobName, subtasks, line);
            PlacementFiles.Line earlier = out.put(found.id, line);
            if (earlier != null) {
                throw new PlacementSchedulerException(line.where() + ": '" + line.label + "' places subtask '"
                        + found.label + "', which line " + earlier.number + " ('" + earlier.label + "') of section"
                        + " '[lost " + section.lost + "]' places already");
            }
        }
        return out;
    }

    static Subtask find(String jobName, List<Subtask> subtasks, PlacementFiles.Line line) {
        String label = line.label;
        String norm = normalise(label);
        Matcher byId = BY_ID.matcher(label);
        List<Predicate<Subtask>> stages = new ArrayList<>();
        stages.add(s -> s.label.equals(label));
        if (byId.matches()) {
            String vid = byId.group(1).toLowerCase();
            String index = " (" + byId.group(2) + "/" + byId.group(3) + ")";
            stages.add(s -> s.vertexId.equals(vid) && s.label.endsWith(index));
        }
        stages.add(s -> s.normalised.equals(norm));
        stages.add(s -> s.label.contains(label));
        stages.add(s -> s.normalised.contains(norm));
        for (Predicate<Subtask> stage : stages) {
            List<Subtask> hits = subtasks.stream().filter(stage).collect(Collectors.toList());
            if (hits.size() == 1) {
                return hits.get(0);
            }
            if (hits.size() > 1) {
                throw new PlacementSchedulerException(line.where() + ": '" + label + "' is ambiguous in job '" + jobName
                        + "': it matches " + hits.stream().limit(LIST_AT_MOST).map(h -> "'" + h.label + "' (vertex "
                        + h.vertexId + ")").collect(Collectors.joining(", "))
                        + " (give the full name, or the vertex id in place of the name)");
            }
        }
        Map<String, Integer> vertices = new LinkedHashMap<>();
        for (Subtask s : subtasks) {
            String name = s.label.substring(0, s.label.lastIndexOf(" ("));
            vertices.merge(name, 1, Integer::sum);
        }
        throw new PlacementSchedulerException(line.where() + ": '" + label + "' matches no subtask of job '" + jobName
                + "' (its vertices: " + vertices.entrySet().stream().map(e -> e.getKey() + " x" + e.getValue())
                .collect(Collectors.joining(", ")) + ")");
    }
}
