// The training text of the demo tokenizer's merges: plain English written for this project,
// with the words a short chat (greetings, questions, tool calls, code) tends to use.
#pragma once

namespace gs {

inline constexpr const char* kDemoTokenizerCorpus = R"(Hello! How can I help you today?
Hi there. I am a small demo model, so my answers are not very good, but I will do my best.
Thank you for asking. What would you like to know about the weather, the news, or the time?
The quick brown fox jumps over the lazy dog, and the dog does not seem to mind at all.
Once upon a time there was a little house at the edge of a quiet forest. In the house lived an
old man and his cat. Every morning the man made tea and the cat sat by the window to watch the
birds. When it rained, they stayed inside and read books about the sea, the mountains and the
stars. When the sun came back, they walked along the river and talked about the day.
A language model reads text as a sequence of tokens. Each token is a piece of a word, a whole
word, or a single character. The model predicts the next token, one step at a time, and the
server streams each new piece of text back to the user as soon as it is ready.
Please write a function that returns the sum of two numbers.
Here is the function you asked for:
def add(a, b):
    return a + b
for i in range(10):
    print(i)
if value is None:
    return default
The answer is 42. The result is true. The list is empty. The file was not found.
Let me think about this step by step. First, we read the question. Then we find the facts we
need. Finally, we write a short and clear answer.
I would like to call the weather tool with the city name and the date.
The tool returned a response: the temperature is 21 degrees and the sky is clear.
Sure! Here are three ideas: go for a walk, read a good book, or call an old friend.
Is there anything else I can help you with? Have a nice day, and see you soon.
What is your name? Where do you live? When did you start? Why does this happen? Which one is
better? Who wrote this? How much does it cost? How many people came to the meeting?
We have been working on this project for a long time, and we are happy with the results.
They said that the new version will be faster, smaller and easier to use than the old one.
She opened the door, looked at the garden, and smiled because the flowers were in bloom.
He wanted to learn how to play the piano, so he practiced every evening after work.
Numbers: 0 1 2 3 4 5 6 7 8 9 10 100 1000 2024 3.14 50% $20
Colors: red, green, blue, yellow, black, white, orange, purple.
Days: Monday, Tuesday, Wednesday, Thursday, Friday, Saturday, Sunday.
Good morning. Good afternoon. Good evening. Good night. Goodbye.
Science: water boils at one hundred degrees, light travels faster than sound, and plants turn
sunlight into energy. The planet Earth moves around the Sun once every year, while the Moon
circles the Earth about once a month. Atoms join into molecules; cells build tissues, organs and
bodies. Scientists measure, compare, test and publish their experiments so others can repeat them.
History: ancient cities grew near rivers because farmers needed fresh water for their fields.
Merchants carried silk, spices, salt, copper and stories between distant kingdoms. Empires rose
and fell, languages changed, and printing made knowledge cheaper for ordinary families.
Cooking: chop two onions, warm some olive oil, add garlic, tomatoes, pepper and a pinch of salt.
Simmer gently for twenty minutes, then serve with rice, bread, pasta or roasted vegetables.
Breakfast might be eggs, toast, cheese, yogurt, fruit, coffee, juice or porridge with honey.
Travel: our train leaves the central station at nine, crosses the bridge, passes through the
valley and arrives near the harbour before lunch. Remember your ticket, passport and umbrella.
Sports: the team practiced passing, running and defending; the coach explained the strategy,
and the players celebrated loudly after scoring the winning goal in the final minute.
Computers: a program stores variables in memory, reads input, processes data, writes output and
reports errors. Engineers design interfaces, review changes, profile performance, fix bugs and
document behaviour. Networks send packets; servers answer requests; clients display results.
Kernels schedule threads; compilers translate source code; databases index tables and queries.
Music: she played a gentle melody on the violin while the orchestra tuned their instruments.
Drums, guitars, flutes, trumpets and voices filled the concert hall with rhythm and harmony.
Nature: tall trees, green hills, snowy peaks, sandy beaches, deep lakes, wild animals, bright
insects, colourful butterflies, singing birds, blooming flowers and quiet meadows everywhere.
Health: drink enough water, sleep well, exercise regularly, eat balanced meals and visit your
doctor when something feels wrong. Doctors examine patients, prescribe medicine and give advice.
Business: the company announced quarterly earnings, hired several managers, opened offices in
three countries and promised customers better products, lower prices and friendlier support.
School: students attend lessons in mathematics, physics, chemistry, biology, geography, history,
literature and art. Teachers prepare exercises, grade homework and encourage curiosity.
Feelings: happy, sad, angry, calm, excited, nervous, proud, grateful, curious, surprised, tired.
Actions: begin, continue, finish, create, delete, update, remember, forget, explain, describe,
imagine, consider, decide, choose, improve, reduce, increase, protect, support, understand.
Questions often start with what, why, how, where, when, which or who; answers should be honest.
Mathematics: add, subtract, multiply and divide; fractions, decimals, percentages, equations,
triangles, circles, squares, angles, vectors, matrices, probability and statistics.
user model system assistant tool function call response message content role name
)";

}  // namespace gs
