// A config file as a list of jobs: [[job]] tables over the top-level
// sections, [input] glob expanded into one job per stack, each job with its
// own output folder.
#include <glob.h>

#include <filesystem>

#include "../core/error.hpp"
#include "../core/natural_sort.hpp"
#include "config.hpp"
#include "config_reader.hpp"

namespace fs = std::filesystem;

namespace stackalign {

namespace {

std::string line_of(const toml::node& n) { return std::to_string(n.source().begin.line); }

// One [[job]] table over the top-level sections: the job's keys win.
toml::table merge_job(const toml::table& root, const toml::table& job, const std::string& path, std::string& name) {
    toml::table merged = root;
    merged.erase("job");
    for (const auto& [k, v] : job) {
        const std::string key(k.str());
        if (key == "name") {
            if (!v.is_string()) throw ConfigError(path + ":" + line_of(v) + ": [[job]] name: expected a string");
            name = v.as_string()->get();
            continue;
        }
        if (key == "mode") {
            merged.insert_or_assign("mode", v);
            continue;
        }
        const toml::table* section = v.as_table();
        if (!section)
            throw ConfigError(path + ":" + line_of(v) + ": [[job]] " + key +
                              ": expected a section such as [job.input] or job.input = {stack = \"...\"}");
        toml::table* into = merged.get_as<toml::table>(key);
        if (!into) {
            merged.insert_or_assign(key, *section);
            continue;
        }
        for (const auto& [k2, v2] : *section) into->insert_or_assign(k2, v2);
    }
    return merged;
}

std::string stem_of(const std::string& p) { return fs::path(p).stem().string(); }

}  // namespace

Batch parse_jobs(const std::string& text, const std::string& path, bool empty_glob_ok) {
    const toml::table root = parse_toml(text, path);
    Batch batch;
    std::vector<Job> jobs;
    if (const toml::node* node = root.get("job")) {
        const toml::array* list = node->as_array();
        if (!list || list->empty() || !list->is_array_of_tables())
            throw ConfigError(path + ":" + line_of(*node) + ": job: expected [[job]] tables, one per job");
        batch.is_batch = true;
        for (std::size_t i = 0; i < list->size(); ++i) {
            std::string name;
            const toml::table merged = merge_job(root, *list->get(i)->as_table(), path, name);
            Config cfg = config_from_table(merged, path);
            jobs.push_back({name, std::move(cfg), ""});
        }
        toml::table top = root;
        top.erase("job");
        const auto* out = top.get_as<toml::table>("output");
        const std::string dir = out && out->get_as<std::string>("dir") ? out->get_as<std::string>("dir")->get() : "out";
        batch.summary_dir = (fs::path(path).parent_path() / dir).lexically_normal().string();
    } else {
        Config cfg = config_from_table(root, path);
        batch.summary_dir = cfg.output.dir;
        jobs.push_back({"", std::move(cfg), ""});
    }

    // [input] glob: one job per stack, output in <dir>/<stack name>.
    for (Job& job : jobs) {
        if (job.config.input.glob.empty()) {
            batch.jobs.push_back(std::move(job));
            continue;
        }
        batch.is_batch = true;
        glob_t g{};
        const int rc = ::glob(job.config.input.glob.c_str(), 0, nullptr, &g);
        std::vector<std::string> files;
        for (std::size_t i = 0; rc == 0 && i < g.gl_pathc; ++i) files.push_back(g.gl_pathv[i]);
        globfree(&g);
        if (files.empty() && !empty_glob_ok)
            throw ConfigError(job.config.where("input.glob") + ": no file matches \"" + job.config.input.glob + "\"");
        natural_sort(files);
        for (const std::string& f : files) {
            Job one{job.name.empty() ? stem_of(f) : job.name + "/" + stem_of(f), job.config, job.config.input.glob};
            one.config.input.glob.clear();
            one.config.input.stack = f;
            one.config.output.dir = (fs::path(job.config.output.dir) / stem_of(f)).string();
            one.config.canonical += "\n# stack: " + f + "\n";
            batch.jobs.push_back(std::move(one));
        }
    }
    for (std::size_t i = 0; i < batch.jobs.size(); ++i) {
        Job& job = batch.jobs[i];
        if (job.name.empty()) {
            const std::string& in = job.config.mode == Mode::landmarks ? job.config.landmarks.points
                                    : job.config.input.stack.empty() ? job.config.input.files : job.config.input.stack;
            job.name = batch.is_batch ? "job " + std::to_string(i + 1) + " (" + stem_of(in) + ")" : stem_of(in);
        }
        for (std::size_t k = 0; k < i; ++k)
            if (fs::path(batch.jobs[k].config.output.dir).lexically_normal() ==
                fs::path(job.config.output.dir).lexically_normal())
                throw ConfigError(path + ": jobs \"" + batch.jobs[k].name + "\" and \"" + job.name +
                                  "\" both write to " + job.config.output.dir + "; give each [[job]] its own [output] dir");
    }
    return batch;
}

Batch load_jobs(const std::string& path, bool empty_glob_ok) {
    return parse_jobs(read_config_text(path), path, empty_glob_ok);
}

}  // namespace stackalign
